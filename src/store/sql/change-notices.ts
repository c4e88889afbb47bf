/**
 * Change notices: what tells the other replicas, at once, that a shared row changed under them (a key
 * revoked, an invocation settled, a background response cancelled through one replica aborting its turn on
 * the one running it). PostgreSQL sends them with pg_notify inside the program's transaction, so a notice
 * goes out only when its change commits (NOTIFY is queued until COMMIT). On SQLite a notice is nothing: the
 * processes sharing a file learn of its changes through data_version and the bus (coordination/bus-wiring.ts).
 */
import { notifyChangeOn, type PgStore } from '../postgres/pg-store.js';
import { native, type SqlProgram } from './sql-program.js';

/** Tells every replica that `topic` changed, with the program's transaction. */
export function changeNotice(topic: string): SqlProgram<void> {
  return native({ sqlite: () => undefined, postgres: (client) => notifyChangeOn(client, topic) });
}

/** Notices for a store that also listens (handed in by the composition root). */
export interface ChangeNotices {
  notify(topic: string): SqlProgram<void>;
  /** Runs `listener` when a replica notified `topic`; returns the unsubscribe function. */
  watch(topic: string, listener: () => void): () => void;
}

export const sqliteChangeNotices: ChangeNotices = { notify: changeNotice, watch: () => () => undefined };

export function postgresChangeNotices(store: Pick<PgStore, 'onChange'>): ChangeNotices {
  return { notify: changeNotice, watch: (topic, listener) => store.onChange(topic, listener) };
}
