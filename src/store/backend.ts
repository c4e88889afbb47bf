/**
 * The configured store (issue 12): `storage.kind: sqlite` (the default) keeps everything in this
 * instance's SQLite file; `storage.kind: postgres` also opens PostgreSQL, where the aggregates that
 * replicas share live (docs/deploy.md lists which). The SQLite file stays open in both: what has not moved
 * to PostgreSQL is this instance's own.
 *
 * Each aggregate picks its implementation from `pg`: `backend.pg ? createPgXStore(backend.pg) :
 * createSqliteXStore(db)`, both implementing the port in src/core/store/, both run by one contract suite.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ConfigError } from '../config-error.js';
import type { DependencyHealth } from '../core/coordination/admission-port.js';
import { openPostgres, type PgStore } from './postgres/pg-store.js';

export interface StoreBackend {
  readonly kind: Config['storage']['kind'];
  /** PostgreSQL, when `storage.kind` is postgres. */
  readonly pg: PgStore | null;
  /** For /readyz: PostgreSQL's state from the last probe (null with SQLite only). */
  health(): DependencyHealth | null;
  close(): Promise<void>;
}

export class PostgresUnavailableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`storage.url: PostgreSQL at ${redactUrl(url)} did not answer (${cause instanceof Error ? cause.message : String(cause)}); start it, or fix storage.url`, { cause });
    this.name = 'PostgresUnavailableError';
  }
}

/** A URL for the logs: the password, if any, replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** /readyz reads the last probe's answer: a request never waits on PostgreSQL. */
const PROBE_INTERVAL_MS = 1000;
const PROBE_TIMEOUT_MS = 1000;

/**
 * Values sealed by one replica (webhook signing secrets, TOTP secrets, decision excerpts) are opened by the
 * others, so they must share the key: with PostgreSQL it comes from the environment, the same on every
 * replica. A key file beside each replica's own SQLite file (the embedded default) would differ per replica.
 */
export const SHARED_SECRET_KEY_MISSING =
  'storage.kind is postgres, and SWITCHBOARD_SECRET_KEY is not set: every replica must seal and open stored secrets with the same key. Set it to the same value on every replica (base64 of 32 bytes: `openssl rand -base64 32`)';

export async function openStoreBackend(storage: Config['storage'], logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<StoreBackend> {
  if (storage.kind === 'sqlite' || storage.url === undefined) return { kind: 'sqlite', pg: null, health: () => null, close: async () => undefined };
  if (!env.SWITCHBOARD_SECRET_KEY) throw new ConfigError(SHARED_SECRET_KEY_MISSING);
  let pg: PgStore;
  try {
    pg = await openPostgres({ url: storage.url, poolSize: storage.pool_size, logger, timeouts: { statementMs: storage.statement_timeout_ms, lockMs: storage.lock_timeout_ms } });
  } catch (err) {
    if (err instanceof Error && err.name === 'PgStoreTooNewError') throw err;
    throw new PostgresUnavailableError(storage.url, err);
  }
  logger.info({ url: redactUrl(storage.url), pool_size: storage.pool_size }, 'storage: PostgreSQL opened and migrated');
  let health: DependencyHealth = { name: 'postgres', ok: true };
  let probing = false;
  const probe = async (): Promise<void> => {
    if (probing) return;
    probing = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS)));
    try {
      await Promise.race([pg.pool.query('SELECT 1'), timeout]);
      if (!health.ok) logger.info('storage: PostgreSQL answers again');
      health = { name: 'postgres', ok: true };
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      if (health.ok) logger.error({ err }, 'storage: PostgreSQL does not answer; writes to it fail until it is back');
      health = { name: 'postgres', ok: false, detail };
    } finally {
      clearTimeout(timer);
      probing = false;
    }
  };
  const interval = setInterval(() => void probe(), PROBE_INTERVAL_MS);
  interval.unref();
  return {
    kind: 'postgres',
    pg,
    health: () => health,
    close: async () => {
      clearInterval(interval);
      await pg.close();
    },
  };
}
