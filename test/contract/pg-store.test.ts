/** The PostgreSQL store's own machinery (store/postgres/pg-store.ts): migrations once, change notices. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { openStoreBackend } from '../../src/store/backend.js';
import pg from 'pg';
import { openPostgres, type PgStore } from '../../src/store/postgres/pg-store.js';
import { isPostgresUnavailable } from '../../src/store/postgres/pg-errors.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations/index.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';

beforeAll(requirePostgres);

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function database(): Promise<TestDatabase> {
  const db = await freshDatabase();
  cleanup.push(db.drop);
  return db;
}
async function open(url: string): Promise<PgStore> {
  const store = await openPostgres({ url, poolSize: 2 });
  cleanup.push(() => store.close());
  return store;
}

describe('PostgreSQL store', () => {
  it('applies every migration exactly once when several processes open one fresh database together', async () => {
    const { url } = await database();
    const stores = await Promise.all([open(url), open(url), open(url), open(url)]);
    const { rows } = await stores[0]!.pool.query<{ name: string }>('SELECT name FROM switchboard_migrations ORDER BY name');
    expect(rows.map((r) => r.name)).toEqual(PG_MIGRATIONS.map((m) => m.name).sort());
  });

  it('refuses a database migrated by a newer build', async () => {
    const { url } = await database();
    const first = await open(url);
    await first.pool.query('INSERT INTO switchboard_migrations (name, applied_at) VALUES ($1, 0)', ['999-from-the-future']);
    await expect(openPostgres({ url, listen: false })).rejects.toThrow(/999-from-the-future/);
  });

  it('delivers a committed change notice to every replica, and none for a rolled-back one', async () => {
    const { url } = await database();
    const [a, b] = await Promise.all([open(url), open(url)]);
    const seen: string[] = [];
    b.onChange('keys', () => seen.push('keys'));
    await a.transaction(async (c) => {
      await a.notifyChange(c, 'keys');
      throw new Error('rolled back');
    }).catch(() => undefined);
    await a.transaction((c) => a.notifyChange(c, 'keys'));
    await expect.poll(() => seen.length).toBe(1);
    await a.transaction((c) => a.notifyChange(c, 'keys'));
    await expect.poll(() => seen.length).toBe(2);
  });

  it('cuts a statement waiting on a lock past the lock bound as "unavailable", rolls its transaction back and gives its connection back', async () => {
    const { url } = await database();
    const store = await openPostgres({ url, poolSize: 1, listen: false, timeouts: { statementMs: 0, lockMs: 200 } });
    cleanup.push(() => store.close());
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    cleanup.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
    const cut = await store
      .transaction(async (c) => {
        await c.query('CREATE TEMP TABLE written_before (x int)');
        await c.query('SELECT count(*) FROM api_keys');
      })
      .then(() => null, (err: unknown) => err);
    expect((cut as { code?: string } | null)?.code).toBe('55P03');
    expect(isPostgresUnavailable(cut)).toBe(true);
    await locker.query('ROLLBACK');
    // The pool's one connection came back, outside any transaction: what the cut one wrote is gone.
    const { rows } = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'written_before'`);
    expect(rows[0]?.n).toBe(0);
  });

  it('cuts a statement running past the statement bound as "unavailable"', async () => {
    const { url } = await database();
    const store = await openPostgres({ url, poolSize: 1, listen: false, timeouts: { statementMs: 200, lockMs: 0 } });
    cleanup.push(() => store.close());
    const cut = await store.pool.query('SELECT pg_sleep(30)').then(() => null, (err: unknown) => err);
    expect((cut as { code?: string } | null)?.code).toBe('57014');
    expect(isPostgresUnavailable(cut)).toBe(true);
  });

  it('migrates without the bounds: a replica starting while another holds the migration lock waits for it', async () => {
    const { url } = await database();
    await open(url);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    cleanup.push(() => holder.end());
    await holder.query('BEGIN');
    await holder.query(`SELECT pg_advisory_xact_lock(hashtext('switchboard_migrations'))`);
    const opening = openPostgres({ url, poolSize: 1, listen: false, timeouts: { statementMs: 100, lockMs: 100 } });
    // Past both bounds while the lock is held, then let go: the opening waited instead of failing.
    await holder.query('SELECT pg_sleep(0.5)');
    await holder.query('COMMIT');
    const store = await opening;
    cleanup.push(() => store.close());
    expect((await store.pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
  });

  it('reads BIGINT columns back as numbers', async () => {
    const { url } = await database();
    const store = await open(url);
    const { rows } = await store.pool.query<{ t: number }>('SELECT 1764288000000::bigint AS t');
    expect(rows[0]!.t).toBe(1764288000000);
  });

  it('opens PostgreSQL for storage.kind postgres only with a shared secret key, and reports it for /readyz', async () => {
    const { url } = await database();
    const storage = { kind: 'postgres' as const, url, path: ':memory:', pool_size: 2, statement_timeout_ms: 30_000, lock_timeout_ms: 2_000 };
    const logger = pino({ level: 'silent' });
    await expect(openStoreBackend(storage, logger, {})).rejects.toThrow(/SWITCHBOARD_SECRET_KEY is not set/);
    const backend = await openStoreBackend(storage, logger, PG_GATEWAY_ENV);
    cleanup.push(() => backend.close());
    expect(backend.pg).not.toBeNull();
    expect(backend.health()).toEqual({ name: 'postgres', ok: true });
  });

  it('names the unreachable PostgreSQL without its password', async () => {
    const storage = { kind: 'postgres' as const, url: 'postgres://u:hunter2@127.0.0.1:1/none', path: ':memory:', pool_size: 1, statement_timeout_ms: 30_000, lock_timeout_ms: 2_000 };
    const failure = openStoreBackend(storage, pino({ level: 'silent' }), PG_GATEWAY_ENV);
    await expect(failure).rejects.toThrow(/did not answer/);
    await expect(failure).rejects.not.toThrow(/hunter2/);
  });
});
