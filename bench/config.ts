/**
 * Builds the gateway config the benchmark serves: one project, one workspace, one chat endpoint on the
 * simulator, one inference key (and optionally a metered twin of that project). Validated with the gateway's own schema before it is written, so a
 * schema change fails here with the field path instead of as a dead child process.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';

export interface BenchConfigOptions {
  /** The simulator base URL, including /v1. */
  readonly upstreamUrl: string;
  /** Directory for the YAML file and the SQLite store. */
  readonly dir: string;
  /** File name stem, so several gateways (log levels, limit variants) can share one dir. */
  readonly name?: string;
  /** Rate limits; 0 means unmetered (the default). A "limits on" variant passes real numbers. */
  readonly requestsPerMinute?: number;
  readonly tokensPerMinute?: number;
  /** Key quota (requests per window); 0 = none. */
  readonly quotaRequests?: number;
  /**
   * A second project in the same gateway, identical but for these limits: the limiter's cost is then
   * measured inside one process, free of the JIT and heap differences between two processes.
   */
  readonly metered?: { readonly requestsPerMinute: number; readonly tokensPerMinute: number; readonly quotaRequests: number };
  /** `coordination.redis_url`: the limiters count in Redis (issue 12) instead of in this process. */
  readonly redisUrl?: string;
  /** The `tracing:` section (issue 34): spans exported to a sink collector. */
  readonly tracing?: Readonly<Record<string, unknown>>;
}

export interface MeteredProject {
  readonly key: string;
  readonly chatPath: string;
}

export interface BenchConfig {
  readonly file: string;
  readonly dbPath: string;
  readonly key: string;
  readonly project: string;
  readonly endpointSlug: string;
  readonly model: string;
  /** Path of the chat route: /proj_bench/chat/v1/chat/completions. */
  readonly chatPath: string;
  readonly metered: MeteredProject | null;
}

export const BENCH_PROJECT_ID = 'proj_bench';
/** Key values start with svc_<slug>_; routes name the project by id (or uuid), not by slug. */
export const BENCH_PROJECT_SLUG = 'bench';
export const BENCH_ENDPOINT_SLUG = 'chat';
export const BENCH_MODEL = 'bench-chat';
export const CHAT_PATH = `/${BENCH_PROJECT_ID}/${BENCH_ENDPOINT_SLUG}/v1/chat/completions`;
const METERED_PROJECT_ID = 'proj_metered';
const METERED_PROJECT_SLUG = 'metered';

interface ProjectLimits {
  readonly requestsPerMinute: number;
  readonly tokensPerMinute: number;
  readonly quotaRequests: number;
}

function benchProject(id: string, slug: string, key: string, upstreamUrl: string, limits: ProjectLimits): Record<string, unknown> {
  return {
    id,
    slug,
    name: slug,
    rate_limit: { requests_per_minute: limits.requestsPerMinute, tokens_per_minute: limits.tokensPerMinute },
    default_workspace: 'ws_0a1b2c',
    workspaces: [{ id: 'ws_0a1b2c', name: 'Bench workspace' }],
    endpoints: [
      {
        id: randomUUID(),
        slug: BENCH_ENDPOINT_SLUG,
        name: 'Bench',
        kind: 'chat',
        tier: 'gpu',
        model: { id: BENCH_MODEL, context_window: 32768, capabilities: ['tools'] },
        upstream: { base_url: upstreamUrl, model: 'sim-chat' },
      },
    ],
    keys: [{ value: key, name: 'bench', scopes: ['inference'], quota_requests: limits.quotaRequests }],
  };
}

const newKey = (slug: string): string => `svc_${slug}_${randomBytes(32).toString('base64url')}`;

export function writeBenchConfig(options: BenchConfigOptions): BenchConfig {
  const name = options.name ?? 'gateway';
  const key = newKey(BENCH_PROJECT_SLUG);
  const meteredKey = options.metered ? newKey(METERED_PROJECT_SLUG) : null;
  const dbPath = join(options.dir, `${name}.db`);
  const limits = { requestsPerMinute: options.requestsPerMinute ?? 0, tokensPerMinute: options.tokensPerMinute ?? 0, quotaRequests: options.quotaRequests ?? 0 };
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: dbPath },
    ...(options.redisUrl ? { coordination: { redis_url: options.redisUrl, key_prefix: `bench-${randomBytes(4).toString('hex')}:` } } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
    // The simulator is plain HTTP on loopback.
    security: { allow_private_targets: true, allow_http_targets: true },
    projects: [
      benchProject(BENCH_PROJECT_ID, BENCH_PROJECT_SLUG, key, options.upstreamUrl, limits),
      ...(options.metered && meteredKey ? [benchProject(METERED_PROJECT_ID, METERED_PROJECT_SLUG, meteredKey, options.upstreamUrl, options.metered)] : []),
    ],
  };
  parseConfig(raw, 'bench config');
  const file = join(options.dir, `${name}.yaml`);
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  const metered = meteredKey ? { key: meteredKey, chatPath: `/${METERED_PROJECT_ID}/${BENCH_ENDPOINT_SLUG}/v1/chat/completions` } : null;
  return { file, dbPath, key, project: BENCH_PROJECT_ID, endpointSlug: BENCH_ENDPOINT_SLUG, model: BENCH_MODEL, chatPath: CHAT_PATH, metered };
}
