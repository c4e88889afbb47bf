/**
 * The store commands (`switchboard keys`, `users`, `usage`) with a config whose storage.kind is postgres:
 * they read and write PostgreSQL, where the gateways do. A SQLite file named by --db is refused there: a key
 * or user written into it would never be seen by a gateway, and the command would still exit 0.
 */
import { ConfigError } from './config.js';
import { redactUrl } from './store/backend.js';
import { openPostgres, PgStoreTooNewError, type PgStore } from './store/postgres/pg-store.js';

export interface CliPostgres {
  readonly url: string;
  /** Where the URL came from (`storage.url in FILE`), for the messages. */
  readonly from: string;
}

/**
 * `use` with PostgreSQL open (no change listener: a command reads or writes once), closed afterwards.
 * `holds`: what the store keeps ("API keys"), `what`: the command and what it does to the store.
 */
export async function withCliPostgres<T>(
  postgres: CliPostgres,
  givenDb: boolean,
  holds: string,
  what: readonly [command: string, verb: string],
  use: (pg: PgStore, where: string) => Promise<T>,
): Promise<T> {
  const { url, from } = postgres;
  if (givenDb) throw new ConfigError(`--db: the config keeps ${holds} in PostgreSQL (${from}, storage.kind: postgres), where the gateways read them; ${what[0]} does not use a SQLite file there: leave --db out`);
  let pg: PgStore;
  try {
    pg = await openPostgres({ url, poolSize: 2, listen: false });
  } catch (err) {
    if (err instanceof PgStoreTooNewError) throw new ConfigError(`${from}: ${err.message}`);
    throw new ConfigError(`${from}: PostgreSQL at ${redactUrl(url)} did not answer (${err instanceof Error ? err.message : String(err)}); ${what[0]} ${what[1]} the store there`);
  }
  try {
    return await use(pg, `PostgreSQL at ${redactUrl(url)}`);
  } finally {
    await pg.close();
  }
}
