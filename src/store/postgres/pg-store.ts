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
/** How long a caller waits for a pool connection (pg-pool's connectionTimeoutMillis), and for a new connection to open. */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * Bounds on one statement, set per connection (PostgreSQL's own settings, so a statement that overruns is
 * cancelled by the server, its transaction aborted and rolled back, and its locks let go). 0: no bound.
 */
export interface PgTimeouts {
  /** `statement_timeout`: a statement running longer is cancelled (SQLSTATE 57014). */
  readonly statementMs: number;
  /** `lock_timeout`: a statement waiting longer for a lock (table, row, advisory) gives up (SQLSTATE 55P03). */
  readonly lockMs: number;
}

/**
 * A backstop past the server's own bound, for a server that stops answering at all (a network gone silent):
 * the client gives up on the statement and the connection is closed (see runTransaction).
 */
const QUERY_TIMEOUT_MARGIN_MS = 5_000;
const QUERY_READ_TIMEOUT = 'Query read timeout';

const parseNumber = (value: string): number => Number(value);
/** Per pool, not pg.types' global table: a library should not change what other pg users parse. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === INT8_OID || oid === NUMERIC_OID ? parseNumber : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser,
};

export type PgQueryable = Pick<pg.PoolClient, 'query'>;

/** The change notice of `topic` (see PgStore.notifyChange), on `db`: a pooled client inside a transaction, or the pool. */
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
  /**
   * Bounds on the pool's statements; absent or null: none (an operator's one-shot command, whose report
   * must not be cut and which a person can interrupt). Migrations never have them: see openPostgres.
   */
  readonly timeouts?: PgTimeouts | null;
}

/** A database migrated by a newer build: refuse to start, as the SQLite store does (store/db.ts). */
export class PgStoreTooNewError extends Error {
  constructor(unknown: readonly string[]) {
    super(`the PostgreSQL schema has migrations this build does not know (${unknown.join(', ')}): run the newer build, or restore a backup made before the upgrade`);
    this.name = 'PgStoreTooNewError';
  }
}

export async function openPostgres(options: PgStoreOptions): Promise<PgStore> {
  // Migrations run on a connection of their own without the request bounds: a replica waits on the
  // advisory lock for as long as another migrates, and a migration may rewrite a large table or wait for
  // the locks of statements still running on the other replicas.
  const migrator = new pg.Pool({ connectionString: options.url, max: 1, types: TYPES, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  migrator.on('error', (err) => options.logger?.warn({ err }, 'postgres: idle connection failed'));
  try {
    await migrate(migrator, PG_MIGRATIONS);
  } finally {
    await migrator.end();
  }
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, types: TYPES, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...boundsOf(options.timeouts ?? null) });
  // An idle connection that the server closed emits here; without a listener it would crash the process.
  pool.on('error', (err) => options.logger?.warn({ err }, 'postgres: idle connection failed'));

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
    // No statement bounds here: the connection sits in LISTEN, idle, for as long as the process runs.
    const client = new pg.Client({ connectionString: options.url, types: TYPES, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
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
    // (the usage writer's) would fail every batch from then on. One whose statement the client gave up
    // waiting for is still busy with it (a ROLLBACK would queue behind it): closed at once, which
    // PostgreSQL takes as a rollback.
    const broken = isQueryReadTimeout(err) || (await client.query('ROLLBACK').then(
      () => false,
      () => true,
    ));
    detach();
    client.release(broken ? toError(err) : undefined);
    throw err;
  }
  detach();
  client.release();
  return result;
}

/** pg's per-connection settings for `timeouts`: the server's two bounds, and the client's backstop past them. */
function boundsOf(timeouts: PgTimeouts | null): Pick<pg.PoolConfig, 'statement_timeout' | 'lock_timeout' | 'query_timeout'> {
  if (timeouts === null) return {};
  return {
    ...(timeouts.statementMs > 0 ? { statement_timeout: timeouts.statementMs, query_timeout: timeouts.statementMs + QUERY_TIMEOUT_MARGIN_MS } : {}),
    ...(timeouts.lockMs > 0 ? { lock_timeout: timeouts.lockMs } : {}),
  };
}

const isQueryReadTimeout = (err: unknown): boolean => err instanceof Error && err.message === QUERY_READ_TIMEOUT;

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
