/**
 * The PostgreSQL store (issue 12, `storage.kind: postgres`): one `pg` pool per process, the migrations,
 * and change notices. Replicas on several hosts share one database; each keeps its caches in memory and
 * reloads them when another replica commits a change (LISTEN/NOTIFY on one channel, the network
 * equivalent of SQLite's data_version), so the request path never waits on PostgreSQL.
 *
 * Times are stored as milliseconds in BIGINT columns, as in SQLite, and read back as numbers (the type
 * parsers below): every value the gateway stores (times, counts, micro-dollars) is far below 2^53.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { PG_MIGRATIONS, type PgMigration } from './migrations/index.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const CHANGES_CHANNEL = 'switchboard_changes';
/** How long the change listener waits before reconnecting after its connection dropped. */
const LISTEN_RETRY_MS = 500;

const parseNumber = (value: string): number => Number(value);
/** Per pool, not pg.types' global table: a library should not change what other pg users parse. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === INT8_OID || oid === NUMERIC_OID ? parseNumber : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser,
};

export type PgQueryable = Pick<pg.PoolClient, 'query'>;

/** PgStore.notifyChange on a given connection (store/sql/change-notice.ts sends it from inside a program). */
export async function notifyChangeOn(db: PgQueryable, topic: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, topic]);
}

export interface PgStore {
  readonly pool: pg.Pool;
  /** `fn` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  transaction<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R>;
  /**
   * Tells every replica (this one included) that `topic` changed; inside a transaction, the notice is
   * delivered only if it commits (PostgreSQL queues NOTIFY until COMMIT).
   */
  notifyChange(db: PgQueryable, topic: string): Promise<void>;
  /** `fn` runs when any replica notifies `topic`, and after the listener reconnected (a notice may have been missed). */
  onChange(topic: string, fn: () => void): () => void;
  close(): Promise<void>;
}

export interface PgStoreOptions {
  readonly url: string;
  readonly poolSize?: number;
  readonly logger?: Pick<Logger, 'warn' | 'error'>;
  /** Listen for change notices (a one-shot command, a migration, does not need to). */
  readonly listen?: boolean;
}

/** A database migrated by a newer build: refuse to start, as the SQLite store does (store/db.ts). */
export class PgStoreTooNewError extends Error {
  constructor(unknown: readonly string[]) {
    super(`the PostgreSQL schema has migrations this build does not know (${unknown.join(', ')}): run the newer build, or restore a backup made before the upgrade`);
    this.name = 'PgStoreTooNewError';
  }
}

export async function openPostgres(options: PgStoreOptions): Promise<PgStore> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, types: TYPES, connectionTimeoutMillis: 5000 });
  // An idle connection that the server closed emits here; without a listener it would crash the process.
  pool.on('error', (err) => options.logger?.warn({ err }, 'postgres: idle connection failed'));
  try {
    await migrate(pool, PG_MIGRATIONS);
  } catch (err) {
    await pool.end();
    throw err;
  }

  const listeners = new Map<string, Set<() => void>>();
  const fire = (topic: string): void => {
    for (const fn of listeners.get(topic) ?? []) fn();
  };
  const fireAll = (): void => {
    for (const topic of listeners.keys()) fire(topic);
  };

  let listenClient: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;
  const listen = async (reconnected: boolean): Promise<void> => {
    const client = new pg.Client({ connectionString: options.url, types: TYPES, connectionTimeoutMillis: 5000 });
    const again = (err: unknown): void => {
      options.logger?.warn({ err }, 'postgres: change listener lost its connection; reconnecting');
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (listenClient === client) listenClient = null;
      if (!closed && retry === null) retry = setTimeout(() => ((retry = null), void listen(true)), LISTEN_RETRY_MS);
    };
    client.on('error', again);
    client.on('notification', (msg) => {
      if (msg.channel === CHANGES_CHANNEL && msg.payload) fire(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      again(err);
      return;
    }
    if (closed) return void client.end().catch(() => undefined);
    listenClient = client;
    if (reconnected) fireAll();
  };
  if (options.listen !== false) await listen(false);

  return {
    pool,
    transaction: (fn) => runTransaction(pool, fn),
    notifyChange: notifyChangeOn,
    onChange(topic, fn) {
      let set = listeners.get(topic);
      if (!set) listeners.set(topic, (set = new Set()));
      set.add(fn);
      return () => void set.delete(fn);
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      await listenClient?.end().catch(() => undefined);
      await pool.end();
    },
  };
}

/**
 * Applies the migrations this database lacks, in order, in one transaction under an advisory lock, so
 * replicas started together on one fresh database migrate it exactly once (the others wait on the lock,
 * then find nothing left to do).
 */
async function migrate(pool: pg.Pool, migrations: readonly PgMigration[]): Promise<void> {
  await runTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('switchboard_migrations'))`);
    await client.query('CREATE TABLE IF NOT EXISTS switchboard_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)');
    const applied = new Set((await client.query<{ name: string }>('SELECT name FROM switchboard_migrations')).rows.map((r) => r.name));
    const known = new Set(migrations.map((m) => m.name));
    const unknown = [...applied].filter((name) => !known.has(name));
    if (unknown.length > 0) throw new PgStoreTooNewError(unknown);
    for (const m of migrations) {
      if (applied.has(m.name)) continue;
      if (m.sql.trim() !== '') await client.query(m.sql);
      await client.query('INSERT INTO switchboard_migrations (name, applied_at) VALUES ($1, $2)', [m.name, Date.now()]);
    }
  });
}

/** `fn` in one transaction on one connection of the pool: committed when it resolves, rolled back when it throws. */
async function runTransaction<R>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
  const client = await pool.connect();
  const detach = quietWhileCheckedOut(client);
  let result: R;
  try {
    await client.query('BEGIN');
    result = await fn(client);
    await client.query('COMMIT');
  } catch (err) {
    // A connection that cannot even roll back is broken (PostgreSQL restarted, the network dropped):
    // destroyed, not handed back, or the pool would give it to the next caller, and a pool of one
    // (the usage writer's) would fail every batch from then on.
    const broken = await client.query('ROLLBACK').then(
      () => false,
      () => true,
    );
    detach();
    client.release(broken ? toError(err) : undefined);
    throw err;
  }
  detach();
  client.release();
  return result;
}

const toError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/**
 * A checked-out client whose connection drops between two queries emits 'error', and pg-pool listens only
 * on idle clients: unheard, the error is an uncaught exception that ends the process, or the writer thread
 * the usage rows go through. The next query on the client fails instead, which the caller handles.
 */
function quietWhileCheckedOut(client: pg.PoolClient): () => void {
  const ignore = (): void => undefined;
  client.on('error', ignore);
  return () => void client.off('error', ignore);
}
