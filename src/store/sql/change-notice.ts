/**
 * A change notice inside a program's transaction: PostgreSQL tells every replica that `topic` changed
 * (NOTIFY, delivered only if the transaction commits; postgres/pg-store.ts); SQLite has nothing to do,
 * since the processes sharing its file see a commit through data_version.
 */
import { notifyChangeOn } from '../postgres/pg-store.js';
import { native, type SqlProgram } from './sql-program.js';

export function changeNotice(topic: string): SqlProgram<void> {
  return native({ sqlite: () => undefined, postgres: (client) => notifyChangeOn(client, topic) });
}
