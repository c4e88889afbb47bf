/**
 * The PostgreSQL suites need the machine's PostgreSQL (127.0.0.1:5432, trust auth, database `test`).
 * When it does not answer they fail, loudly and at once, never skip (as redis-required.ts does for Redis).
 * Each test gets a database of its own, created from nothing and dropped afterwards, so suites run in
 * parallel without seeing each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URL = process.env.SWITCHBOARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const PG_MISSING = 'PostgreSQL is not running on 127.0.0.1:5432 (trust auth, database test); .ci/run starts it';

async function admin<R>(fn: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`${PG_MISSING} (${err instanceof Error ? err.message : String(err)})`);
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function requirePostgres(): Promise<void> {
  await admin((c) => c.query('SELECT 1'));
}

export interface TestDatabase {
  /** A postgres:// URL of a database nobody else uses. */
  readonly url: string;
  /** Drops it, closing whatever connections are still open on it. */
  drop(): Promise<void>;
}

/** A new empty database on the machine's PostgreSQL. */
export async function freshDatabase(): Promise<TestDatabase> {
  const name = `sbtest_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/**
 * The environment of a gateway process on PostgreSQL: replicas share the secret key (store/backend.ts
 * refuses to start without it in this mode). A fixed test value: 32 bytes, base64.
 */
export const PG_GATEWAY_ENV: NodeJS.ProcessEnv = { SWITCHBOARD_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
