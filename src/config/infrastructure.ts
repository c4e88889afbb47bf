/**
 * The config file's sections about the process and what it stands on: the listener (`server`), the store
 * (`storage`), what replicas share (`coordination`), which outbound targets are allowed (`security`) and the
 * worker pool (`pool`).
 */
import { z } from 'zod';
import { allowedTargetProblem } from '../core/net/address-policy.js';
import { LOG_LEVELS } from '../log-levels.js';

const tlsSchema = z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1) });

export const serverSchema = z.strictObject({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).default(8080),
  region: z.string().min(1).default('local'),
  production: z.boolean().default(false),
  tls: tlsSchema.optional(),
  trust_proxy: z.boolean().default(false),
  /** Largest request body accepted on inference routes, in bytes (management routes: 16 KiB). */
  max_body_bytes: z.number().int().positive().default(8 * 1024 * 1024),
  /** How long SIGTERM waits for in-flight requests before closing anyway. */
  drain_timeout_ms: z.number().int().min(0).default(10_000),
  /** Operator escape hatch: run on uWS's pure-JS fallback instead of refusing to start. */
  allow_uws_fallback: z.boolean().default(false),
  log_level: z.enum(LOG_LEVELS).optional(),
  /**
   * Event loops serving the one port (`serve --workers N` overrides it): worker threads of one process,
   * sharing the store and, without Redis, the limit counters in shared memory (docs/deploy.md).
   */
  workers: z.number().int().min(1).max(64).default(1),
  /**
   * GET /metrics: on the main listener by default. `port` serves it on a listener of its own instead (a
   * scrape network apart from client traffic); `token_env` names an environment variable whose value a
   * scraper must send as `Authorization: Bearer <value>`.
   */
  metrics: z
    .strictObject({
      host: z.string().min(1).optional(),
      port: z.number().int().min(0).max(65535).optional(),
      token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
    })
    .default({}),
});

/**
 * A relative path is from the config file's folder (loadConfigFile), so every command finds the same store.
 * `kind: postgres` (issue 12) puts the shared aggregates in PostgreSQL at `url` so that replicas on several
 * hosts share them; `path` stays this instance's own SQLite file for what is not shared yet
 * (docs/deploy.md lists both).
 */
export const storageSchema = z
  .strictObject({
    kind: z.enum(['sqlite', 'postgres']).default('sqlite'),
    path: z.string().min(1).default('data/switchboard.db'),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
    /** Connections this instance keeps open to PostgreSQL. */
    pool_size: z.number().int().min(1).max(100).default(10),
    /**
     * Bounds on one statement of the gateway's pool (PostgreSQL's statement_timeout and lock_timeout, per
     * connection; 0: none); overrun, the request answers 503 store_unavailable. The lock bound keeps one
     * hot table from taking the whole pool: a statement queued behind a long lock gives its connection
     * back after 2 s, well inside the 5 s other requests wait for one, instead of holding it for as long
     * as the lock lasts (a row lock between two of the gateway's own transactions lasts milliseconds). The
     * statement bound is generous: the longest statements on this pool are usage reports over a large
     * ledger. Migrations, the LISTEN connection and the usage writer's batches are not bounded by these.
     */
    statement_timeout_ms: z.number().int().min(0).max(3_600_000).default(30_000),
    lock_timeout_ms: z.number().int().min(0).max(3_600_000).default(2_000),
  })
  .superRefine((s, ctx) => {
    if (s.kind === 'postgres' && s.url === undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required when kind is postgres (postgres://user@host:5432/database)' });
    if (s.kind === 'sqlite' && s.url !== undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is only read when kind is postgres' });
  });

/**
 * What N replicas must share (issue 12): absent `redis_url`, counters and the invalidation bus stay in
 * this process. `on_outage` says what the request limiters do while Redis does not answer
 * (docs/deploy.md "Shared limits while Redis is slow or down"): `fail_open` admits and counts locally, at
 * this replica's share of each limit (limit / live replicas), `fail_closed` answers 503. Management
 * requests are counted at the share under both, so a key can always be revoked.
 */
export const coordinationSchema = z.strictObject({
  redis_url: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  key_prefix: z.string().min(1).default('switchboard:'),
  on_outage: z.enum(['fail_open', 'fail_closed']).default('fail_open'),
  /**
   * How long an admission waits for Redis: past it the request is refused 503 limits_unavailable (Redis
   * may still count it; a management request is counted at this replica's share instead), and Redis is
   * treated as down only when nothing answers for max(2 s, 8 timeouts) after a command was sent.
   */
  command_timeout_ms: z.number().int().positive().default(250),
});

export const securitySchema = z.strictObject({
  /** Testing only: every private address becomes reachable. `allowed_targets` is the production way. */
  allow_private_targets: z.boolean().default(false),
  allow_http_targets: z.boolean().default(false),
  /**
   * Webhook receivers and image hosts on an internal network: host names (matched with the URL's host,
   * case-insensitive) and addresses or CIDR ranges (matched with the address connected to) admitted
   * although private. Everything else stays refused (core/net/address-policy.ts).
   */
  allowed_targets: z
    .array(
      z.string().superRefine((entry, ctx) => {
        const problem = allowedTargetProblem(entry);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    )
    .max(256)
    .default([]),
});

export const poolSchema = z.strictObject({
  min_threads: z.number().int().min(1).max(64).default(1),
  max_threads: z.number().int().min(1).max(64).default(2),
});
