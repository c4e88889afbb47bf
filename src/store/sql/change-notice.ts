/**
 * A change notice sent from inside a program's transaction (PostgreSQL NOTIFY, queued until COMMIT, so a
 * replica hears of a change only once it is there to read). SQLite sends nothing: every process on the file
 * sees a commit through PRAGMA data_version.
 */
import { notifyChangeOn } from '../postgres/pg-store.js';
import { native, type SqlProgram } from './sql-program.js';

export function changeNotice(topic: string): SqlProgram<void> {
  return native({ sqlite: () => undefined, postgres: (client) => notifyChangeOn(client, topic) });
}
