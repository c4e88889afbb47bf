/**
 * Change notices: what tells the other replicas, at once, that a shared row changed under them (a
 * background response cancelled through one replica aborts its turn on the one running it). PostgreSQL
 * sends them with pg_notify (pg-store.ts), inside the program's transaction, so a notice goes out only
 * when its change commits. On SQLite a notice is nothing: the processes sharing a file learn of its
 * changes as they did before (SQLite's data_version, the bus: coordination/bus-wiring.ts).
 */
import type { PgStore } from '../postgres/pg-store.js';
import { native, type SqlProgram } from './sql-program.js';

export interface ChangeNotices {
  /** Tells every replica that `topic` changed, with the program's transaction. */
  notify(topic: string): SqlProgram<void>;
  /** Runs `listener` when a replica notified `topic`; returns the unsubscribe function. */
  watch(topic: string, listener: () => void): () => void;
}

const wrongBackend = (): never => {
  throw new Error('a SQLite change notice ran on a PostgreSQL connection: the store was wired to the wrong runner');
};

export const sqliteChangeNotices: ChangeNotices = {
  notify: () => native({ sqlite: () => undefined, postgres: wrongBackend }),
  watch: () => () => undefined,
};

export function postgresChangeNotices(store: Pick<PgStore, 'notifyChange' | 'onChange'>): ChangeNotices {
  return {
    notify: (topic) => native({ sqlite: wrongBackend, postgres: (client) => store.notifyChange(client, topic) }),
    watch: (topic, listener) => store.onChange(topic, listener),
  };
}
