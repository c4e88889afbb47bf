/**
 * The YAML config file: the declaration of infrastructure (server, storage, projects, workspaces,
 * endpoints, bootstrap keys). Parsed once with zod at start and frozen. Field names are a contract with
 * operators: add fields, never rename them.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { dashboardSchema } from './config-dashboard.js';
import { tracingSchema } from './config-tracing.js';
import { KEY_VALUE_PATTERN } from './core/auth/key-token.js';
import { SCOPES } from './core/auth/scopes.js';
import { formatZodIssues } from './core/zod-issue-lines.js';
import { ipOrCidrSchema } from './core/auth/ip-filter.js';
import { allowedTargetProblem } from './core/net/address-policy.js';
import { ConfigError } from './config-error.js';
import { checkDerivableIds, withDerivedIds, type ProjectWithIds } from './config-ids.js';
import { budgetSchema, duplicates, endpointSchema, realtimeSchema, SLUG, workspaceRef } from './config-endpoint.js';

export { ENDPOINT_KINDS, ENDPOINT_STATUSES, ENDPOINT_TIERS, MODEL_CAPABILITIES } from './config-endpoint.js';
export { REASONING_LEVELS } from './core/chat/reasoning-levels.js';
export { SCOPES, type Scope } from './core/auth/scopes.js';

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;
const PROJECT_ID = /^proj_[A-Za-z0-9]+$/;

/** Strict ISO 8601 with a time and zone: Date.parse alone accepts text like "hello 1". */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
export const isoTimestamp = z
  .string()
  .refine((s) => ISO_8601.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 timestamp with a zone, e.g. 2027-01-31T00:00:00Z');

const tlsSchema = z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1) });

const serverSchema = z.strictObject({
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
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
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
const storageSchema = z
  .strictObject({
    kind: z.enum(['sqlite', 'postgres']).default('sqlite'),
    path: z.string().min(1).default('data/switchboard.db'),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
    /** Connections this instance keeps open to PostgreSQL. */
    pool_size: z.number().int().min(1).max(100).default(10),
  })
  .superRefine((s, ctx) => {
    if (s.kind === 'postgres' && s.url === undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required when kind is postgres (postgres://user@host:5432/database)' });
    if (s.kind === 'sqlite' && s.url !== undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is only read when kind is postgres' });
  });

/**
 * What N replicas must share (issue 12): absent `redis_url`, counters and the invalidation bus stay in
 * this process. `on_outage` says what the request limiters do while Redis does not answer
 * (docs/deploy.md "Shared limits while Redis is slow or down"): `fail_open` admits and counts locally, at
 * this replica's share of each limit (limit / live replicas), `fail_closed` answers 503.
 */
const coordinationSchema = z.strictObject({
  redis_url: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  key_prefix: z.string().min(1).default('switchboard:'),
  on_outage: z.enum(['fail_open', 'fail_closed']).default('fail_open'),
  /**
   * How long an admission waits for Redis: past it the request is refused 503 limits_unavailable (Redis
   * may still count it), and Redis is treated as down only when nothing answers for max(2 s, 8 timeouts).
   */
  command_timeout_ms: z.number().int().positive().default(250),
});

const securitySchema = z.strictObject({
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

const poolSchema = z.strictObject({
  min_threads: z.number().int().min(1).max(64).default(1),
  max_threads: z.number().int().min(1).max(64).default(2),
});

const tierTimeoutSchema = z.strictObject({
  request_ms: z.number().int().positive(),
  idle_ms: z.number().int().positive(),
});

/** SPEC "Timeouts by service tier" are fixed for clients; operators (and test configs) may override them. */
const timeoutsSchema = z.strictObject({
  free: tierTimeoutSchema.optional(),
  cpu: tierTimeoutSchema.optional(),
  gpu: tierTimeoutSchema.optional(),
  self_hosted: tierTimeoutSchema.optional(),
});

const featuresSchema = z.strictObject({
  /** SPEC Message object: video_url parts are served only when the deployment enables video input. */
  video_input: z.boolean().default(false),
  /** SPEC Message object: audio input is operator-gated and on by default. */
  audio_input: z.boolean().default(true),
});

const testingSchema = z.strictObject({
  /** Exposes POST /__test/clock to move the gateway's clock forward: for test suites only. */
  controllable_clock: z.boolean().default(false),
  /** Exposes POST /__test/webhook-events to emit arbitrary events into the outbox: tests and bench only. */
  event_injection: z.boolean().default(false),
});

/** SPEC Events 4 and Limits; tests shorten the attempt timeout, operators may tune concurrency. */
const webhooksSchema = z.strictObject({
  /** Delay before each retry, after the previous failure; attempts = retries + 1 (SPEC: 6). */
  retry_schedule_ms: z.array(z.number().int().positive()).max(10).default([60_000, 300_000, 900_000, 3_600_000, 14_400_000]),
  attempt_timeout_ms: z.number().int().positive().max(300_000).default(30_000),
  /** Attempts in flight at once, overall and per webhook endpoint. */
  max_in_flight: z.number().int().min(1).max(1024).default(64),
  per_endpoint_in_flight: z.number().int().min(1).max(256).default(16),
  /** How often the dispatcher looks for due deliveries (emissions also wake it at once). */
  poll_interval_ms: z.number().int().min(10).max(60_000).default(250),
  /** Delivery records that reached an end, and events none still needs, are deleted after this; 0 keeps them. */
  retention_days: z.number().int().min(0).max(3650).default(30),
});

/** SPEC "Management API rate limit": deployment-wide ceilings per project, per minute, no burst. */
const limitsSchema = z.strictObject({
  management_requests_per_minute: z.number().int().min(0).default(60),
  files_requests_per_minute: z.number().int().min(0).default(600),
  conversation_items_requests_per_minute: z.number().int().min(0).default(600),
});

/** Files and uploads (docs/decisions.md "Files and uploads"): byte caps. */
/** Batches (issue 14, docs/decisions.md "Batches"). */
const batchesSchema = z.strictObject({
  /** Batch lines in flight at once, across every batch of the gateway: live requests keep the rest of the upstream. */
  concurrency: z.number().int().positive().max(256).default(4),
  /** Lines one input file may hold (OpenAI's cap). */
  max_lines: z.number().int().positive().default(50_000),
});

const filesSchema = z.strictObject({
  /** One POST /v1/files body's file; 413 past it. */
  max_bytes: z.number().int().positive().default(512 * 1024 * 1024),
  /** One upload part (POST /v1/uploads/{id}/parts); 413 past it. */
  max_part_bytes: z.number().int().positive().default(64 * 1024 * 1024),
  /** An upload's declared `bytes` (the assembled file). */
  max_upload_bytes: z.number().int().positive().default(8 * 1024 * 1024 * 1024),
});


const keySchema = z.strictObject({
  value: z.string().regex(KEY_VALUE_PATTERN, 'must be svc_<slug>_<43 base64url characters>'),
  name: z.string().optional(),
  scopes: z.array(z.enum(SCOPES)).min(1).default(['inference']),
  allowed_ips: z.array(ipOrCidrSchema).default([]),
  blocked_ips: z.array(ipOrCidrSchema).default([]),
  expires_at: isoTimestamp.optional(),
  quota_requests: z.number().int().min(0).default(0),
  quota_window: z.number().int().positive().default(60),
  /** An endpoint of the project by id or slug. */
  endpoint_id: z.string().min(1).optional(),
  allowed_workspace_ids: z.array(workspaceRef).min(1, 'must not be empty').optional(),
});

/**
 * The semantic router's deployment defaults (the values a project's settings follow until it sets them,
 * and what an explicit null on PATCH returns to), plus its operational knobs.
 */
const semanticRouterSchema = z.strictObject({
  enabled: z.boolean().default(true),
  multi_model_enabled: z.boolean().default(true),
  similarity_floor: z.number().min(0).max(1).default(0.3),
  switch_margin: z.number().min(0).max(1).default(0.1),
  proximity_bonus: z.number().min(0).max(1).default(0.02),
  /** How long a conversation remembers its endpoint after its last routed turn. */
  affinity_ttl_ms: z.number().int().positive().default(6 * 3_600_000),
  affinity_max_entries: z.number().int().positive().default(100_000),
  /** The per-request embedding call; past it the router fails open to the fallback. */
  embedding_timeout_ms: z.number().int().positive().max(60_000).default(5000),
  /** Nearest profile vectors read per search; endpoints are scored by their best vector among them. */
  search_k: z.number().int().min(1).max(1024).default(32),
  hnsw: z
    .strictObject({
      m: z.number().int().min(2).max(100).default(16),
      ef_construction: z.number().int().min(10).max(2000).default(200),
      ef_search: z.number().int().min(1).max(2000).default(64),
    })
    .prefault({}),
});

/** Server-side image fetches for image_url parts (SPEC "Message object"). */
const mediaSchema = z.strictObject({
  fetch_timeout_ms: z.number().int().positive().max(120_000).default(10_000),
  max_image_bytes: z.number().int().positive().default(10 * 1024 * 1024),
  /** Across every image of one request. */
  max_total_bytes: z.number().int().positive().default(32 * 1024 * 1024),
  max_redirects: z.number().int().min(0).max(20).default(5),
  /** Sent in the User-Agent of every third-party fetch, with the product token and version. */
  user_agent_link: z.url().default('https://github.com/switchboard-gateway/switchboard'),
  user_agent_contact: z.string().min(3).default('mailto:operator@switchboard.invalid'),
});

const audioSchema = z.strictObject({
  /** Multipart uploads to the transcription and translation routes (413 past it). */
  max_upload_bytes: z.number().int().positive().default(25 * 1024 * 1024),
  /** Largest realtime client message; a larger one closes the connection with 1009 (docs/realtime.md "Backpressure"). */
  realtime_max_message_bytes: z.number().int().min(1024).default(4 * 1024 * 1024),
});

/** The execution surface's deployment settings (docs/exec.md). */
const execSchema = z.strictObject({
  /** An agent silent for this long goes offline (heartbeats every third of it). */
  lease_ms: z.number().int().min(1000).default(30_000),
  /** An invocation's timeout when the request names none (requests may name 1 ms to 1 h). */
  default_timeout_ms: z.number().int().positive().max(3_600_000).default(60_000),
  /** Output kept per invocation; the rest is dropped and `output_truncated` says so. */
  output_cap_bytes: z.number().int().min(1024).default(64 * 1024),
  /** Agent connections (each one enrollment) per join or agent key, sliding 60 s; 0: unmetered (issue 31). */
  enrollments_per_minute_per_key: z.number().int().min(0).default(12),
  /** Agent connections per project, all its keys together, sliding 60 s; 0: unmetered. */
  enrollments_per_minute_per_project: z.number().int().min(0).default(120),
  /**
   * The MCP server's DNS-rebinding guard (docs/mcp.md "Origin and Host"): host names a request's Host (and a
   * browser's Origin) may carry. Empty: loopback names when the gateway listens on a loopback address,
   * every Host (and no browser Origin) otherwise.
   */
  mcp_allowed_hosts: z.array(z.string().min(1)).default([]),
  /** Browser origins (`scheme://host[:port]`) allowed to call the MCP server besides those hosts. */
  mcp_allowed_origins: z.array(z.string().min(1)).default([]),
  /**
   * MCP sessions held at once (docs/mcp.md "Sessions"): per API key, per project, and by this process. Past
   * a key's or project's cap its own least recently used idle session is closed, never another tenant's.
   */
  mcp_sessions: z
    .strictObject({
      per_key: z.number().int().min(1).default(100),
      per_project: z.number().int().min(1).default(1_000),
      total: z.number().int().min(1).default(10_000),
    })
    .default({ per_key: 100, per_project: 1_000, total: 10_000 }),
});

const workspaceSchema = z.strictObject({
  /** Omitted: derived from the project id and the name, the same at every start (config-ids.ts). */
  id: z.string().regex(WORKSPACE_ID, 'must be ws_<hex>').optional(),
  name: z.string().min(1),
  routing_mode: z.enum(['semantic', 'concrete']).nullable().default(null),
  zero_data_retention: z.boolean().default(false),
  /** Operational workspaces run exec traffic; one may never be the project default (SPEC Authentication 10). */
  operational: z.boolean().default(false),
  budget: budgetSchema.optional(),
  /** Execution surface (docs/exec.md): who approves destructive invocations, and what else needs approval. */
  exec: z
    .strictObject({
      /** Tools that wait for an approval although their manifest risk is not `destructive`. */
      approval_required_tools: z.array(z.string().min(1)).default([]),
      /** Escalation stages: each stage's target has `timeout_ms` to decide before the next takes over. */
      approval_chain: z
        .array(z.strictObject({ target: z.string().min(1), timeout_ms: z.number().int().positive() }))
        .min(1)
        .default([{ target: 'operators', timeout_ms: 15 * 60 * 1000 }]),
    })
    .prefault({}),
});

const projectSchemaBase = z.strictObject({
    id: z.string().regex(PROJECT_ID, 'must be proj_<id>'),
    slug: z.string().regex(SLUG, 'must be lowercase letters, digits and dashes'),
    name: z.string().min(1).optional(),
    plan: z.enum(['free', 'paid']).default('paid'),
    rate_limit: z
      .strictObject({
        requests_per_minute: z.number().int().min(0).default(1024),
        tokens_per_minute: z.number().int().min(0).default(2_097_152),
      })
      .default({ requests_per_minute: 1024, tokens_per_minute: 2_097_152 }),
    default_workspace: workspaceRef.nullable().optional(),
    workspaces: z.array(workspaceSchema).default([]),
    endpoints: z.array(endpointSchema).default([]),
    keys: z.array(keySchema).default([]),
});
/** The project as written: endpoint and workspace ids may be missing (config-ids.ts fills them in). */
export type DeclaredProject = z.infer<typeof projectSchemaBase>;
const projectSchema = projectSchemaBase.superRefine(checkDerivableIds).transform(withDerivedIds).superRefine(checkProjectReferences);

function checkProjectReferences(p: ProjectWithIds, ctx: z.RefinementCtx): void {
  const workspaceIds = new Set(p.workspaces.map((w) => w.id));
  const issue = (path: (string | number)[], message: string): void => {
    ctx.addIssue({ code: 'custom', path, message });
  };
  if (p.default_workspace && !workspaceIds.has(p.default_workspace)) {
    issue(['default_workspace'], `names ${p.default_workspace}, which is not in workspaces`);
  }
  if (p.workspaces.some((w) => w.id === p.default_workspace && w.operational)) {
    issue(['default_workspace'], `names ${p.default_workspace}, an operational workspace, which cannot be the default`);
  }
  duplicates(p.workspaces.map((w) => w.id)).forEach((i) => issue(['workspaces', i, 'id'], 'is a duplicate'));
  duplicates(p.endpoints.map((e) => e.slug)).forEach((i) => issue(['endpoints', i, 'slug'], 'is a duplicate'));
  duplicates(p.endpoints.map((e) => e.id)).forEach((i) => issue(['endpoints', i, 'id'], 'is a duplicate'));
  duplicates(p.keys.map((k) => k.value)).forEach((i) => issue(['keys', i, 'value'], 'is a duplicate'));
  p.endpoints.forEach((e, i) =>
    (e.workspaces ?? []).forEach((w, j) => {
      if (!workspaceIds.has(w)) issue(['endpoints', i, 'workspaces', j], `names ${w}, which is not in workspaces`);
    }),
  );
  const endpointIds = new Set(p.endpoints.map((e) => e.id));
  p.keys.forEach((k, i) => {
    if (!k.value.startsWith(`svc_${p.slug}_`) && !k.value.startsWith('svc_mgmt_')) {
      issue(['keys', i, 'value'], `must start with svc_${p.slug}_ (the project slug)`);
    }
    if (k.endpoint_id && !endpointIds.has(k.endpoint_id)) issue(['keys', i, 'endpoint_id'], 'names no endpoint of the project');
    (k.allowed_workspace_ids ?? []).forEach((w, j) => {
      if (!workspaceIds.has(w)) issue(['keys', i, 'allowed_workspace_ids', j], `names ${w}, which is not in workspaces`);
    });
    if (k.allowed_workspace_ids && k.scopes.includes('management')) {
      issue(['keys', i, 'allowed_workspace_ids'], 'cannot be combined with the management scope');
    }
  });
}


export const configSchema = z
  .strictObject({
    server: serverSchema.prefault({}),
    storage: storageSchema.prefault({}),
    coordination: coordinationSchema.prefault({}),
    security: securitySchema.prefault({}),
    pool: poolSchema.prefault({}),
    timeouts: timeoutsSchema.prefault({}),
    features: featuresSchema.prefault({}),
    testing: testingSchema.prefault({}),
    limits: limitsSchema.prefault({}),
    webhooks: webhooksSchema.prefault({}),
    media: mediaSchema.prefault({}),
    audio: audioSchema.prefault({}),
    files: filesSchema.prefault({}),
    semantic_router: semanticRouterSchema.prefault({}),
    exec: execSchema.prefault({}),
    batches: batchesSchema.prefault({}),
    dashboard: dashboardSchema.prefault({}),
    /** OpenTelemetry traces over OTLP/HTTP; off by default (src/tracing). */
    tracing: tracingSchema.prefault({}),
    projects: z.array(projectSchema).default([]),
  })
  .superRefine((c, ctx) => {
    c.dashboard.oidc_providers.forEach((p, i) => {
      if (p.allow_insecure_issuer && c.server.production) {
        ctx.addIssue({ code: 'custom', path: ['dashboard', 'oidc_providers', i, 'allow_insecure_issuer'], message: 'cannot be on with server.production: true' });
      }
    });
    if (c.testing.controllable_clock && c.server.production) {
      ctx.addIssue({ code: 'custom', path: ['testing', 'controllable_clock'], message: 'cannot be on with server.production: true' });
    }
    if (c.testing.event_injection && c.server.production) {
      ctx.addIssue({ code: 'custom', path: ['testing', 'event_injection'], message: 'cannot be on with server.production: true' });
    }
    const duplicate = (path: (string | number)[]): void => {
      ctx.addIssue({ code: 'custom', path, message: 'is a duplicate' });
    };
    duplicates(c.projects.map((p) => p.id)).forEach((i) => duplicate(['projects', i, 'id']));
    duplicates(c.projects.map((p) => p.slug)).forEach((i) => duplicate(['projects', i, 'slug']));
    // Endpoint ids and key values are global: the same one in two projects would move between them.
    const flat = <T>(pick: (p: ProjectConfigInput) => T[]) =>
      c.projects.flatMap((p, pi) => pick(p).map((v, i) => ({ v, path: ['projects', pi, i] as const })));
    const endpointIds = flat((p) => p.endpoints.map((e) => e.id));
    const endpointDupes = new Set(duplicates(endpointIds.map((e) => e.v)));
    endpointIds.forEach((e, i) => {
      if (endpointDupes.has(i)) duplicate(['projects', e.path[1], 'endpoints', e.path[2], 'id']);
    });
    const keyValues = flat((p) => p.keys.map((k) => k.value));
    const keyDupes = new Set(duplicates(keyValues.map((k) => k.v)));
    keyValues.forEach((k, i) => {
      if (keyDupes.has(i)) duplicate(['projects', k.path[1], 'keys', k.path[2], 'value']);
    });
  });

type ProjectConfigInput = ProjectWithIds;

export type Config = z.infer<typeof configSchema>;
export type ProjectConfig = Config['projects'][number];
export type EndpointConfig = ProjectConfig['endpoints'][number];
export type ModelConfig = EndpointConfig['model'];
export type KeyConfig = ProjectConfig['keys'][number];
export type TimeoutOverrides = Config['timeouts'];
export type BudgetConfig = z.infer<typeof budgetSchema>;
export type WebhooksConfig = Config['webhooks'];
export type RealtimeConfig = z.infer<typeof realtimeSchema>;
/** What a realtime endpoint without a `realtime` block gets. */
export const REALTIME_DEFAULTS: RealtimeConfig = realtimeSchema.parse({});
export type MediaConfig = Config['media'];
export type AudioConfig = Config['audio'];
export type FilesConfig = Config['files'];
export type SemanticRouterConfig = Config['semantic_router'];

export { ConfigError };

/**
 * `baseDir`: the folder relative paths in the file (storage.path, server.tls files) are taken from;
 * loadConfigFile passes the file's own. Without it they are left as written (the working directory).
 */
export function parseConfig(raw: unknown, source = 'config', baseDir?: string): Config {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(`${source} is invalid:\n${formatZodIssues(result.error.issues)}`);
  const config = result.data;
  if (baseDir !== undefined) {
    if (config.storage.path !== ':memory:') config.storage.path = resolve(baseDir, config.storage.path);
    const { tls } = config.server;
    if (tls) config.server.tls = { cert_file: resolve(baseDir, tls.cert_file), key_file: resolve(baseDir, tls.key_file) };
  }
  return deepFreeze(config);
}

export function loadConfigFile(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid YAML: ${(err as Error).message}`);
  }
  // From the file's folder, not the working directory: `keys create --config FILE` run from another folder
  // used to mint into a new, empty database the gateway never read (issue 19, defect 9).
  return parseConfig(raw, file, dirname(resolve(file)));
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
