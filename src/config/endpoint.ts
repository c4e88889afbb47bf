/**
 * The endpoint part of the config file (src/config.ts): an endpoint with its model, upstream servers, routing
 * profile, budget, realtime settings and prices, and the names these schemas share with the rest of the file.
 */
import { z } from 'zod';
import { REASONING_LEVELS } from '../core/chat/reasoning-levels.js';
import { PER_MILLION_DECIMALS, PER_SECOND_DECIMALS, priceProblem } from '../core/usage/cost.js';
/** At most 40 characters, so minted key values stay under the 128-character cap of key parsing. */
export const SLUG = /^[a-z0-9][a-z0-9-]{0,39}$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Path segments that would make a direct route ambiguous with another path family. */
export const RESERVED_SLUGS = new Set(['v1', 'auth', 'healthz', 'readyz', 'metrics']);

export const ENDPOINT_KINDS = ['chat', 'embedding', 'transcription', 'speech', 'realtime', 'rerank'] as const;
export const ENDPOINT_TIERS = ['free', 'cpu', 'gpu', 'self_hosted'] as const;
export const ENDPOINT_STATUSES = ['active', 'provisioning', 'suspended', 'error'] as const;
export const MODEL_CAPABILITIES = ['tools', 'structured_output', 'vision', 'audio_input', 'video_input'] as const;

/**
 * Budgets per UTC hour, per UTC day, and all-time, in tokens (prompt + completion - cached) and in money
 * (US cents of the turns' recorded cost, from the endpoints' `prices`; an unpriced turn costs 0). Omitted = no cap.
 */
export const budgetSchema = z.strictObject({
  hourly_tokens: z.number().int().positive().optional(),
  daily_tokens: z.number().int().positive().optional(),
  hard_cap_tokens: z.number().int().positive().optional(),
  hourly_cents: z.number().int().positive().optional(),
  daily_cents: z.number().int().positive().optional(),
  hard_cap_cents: z.number().int().positive().optional(),
});

/** A price in USD, as a YAML number or a decimal string; exact (core/usage/cost.ts), so decimals are bounded. */
const price = (decimals: number) =>
  z.union([z.number(), z.string()]).superRefine((v, ctx) => {
    const problem = priceProblem(v, decimals);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * What an endpoint's turns cost, in USD (README "Usage and spend"): per million prompt tokens not from a
 * cache, per million cached prompt tokens (default: the input price), per million completion tokens
 * (reasoning included). Audio endpoints may price their audio side per second instead (transcription and
 * realtime: the input; speech: the output), at the ledger's 10 audio tokens a second.
 */
const pricesSchema = z
  .strictObject({
    input_per_million: price(PER_MILLION_DECIMALS).optional(),
    cached_input_per_million: price(PER_MILLION_DECIMALS).optional(),
    output_per_million: price(PER_MILLION_DECIMALS).optional(),
    audio_per_second: price(PER_SECOND_DECIMALS).optional(),
  })
  .refine((p) => Object.values(p).some((v) => v !== undefined), 'must set at least one price (0 for free)');

/** Realtime endpoints (docs/realtime.md): where the audio goes and how segment mode cuts it. */
export const realtimeSchema = z.strictObject({
  /** relay: frames to an upstream realtime WebSocket; segment: the gateway cuts segments for a transcription route. */
  mode: z.enum(['segment', 'relay']).default('segment'),
  /** relay mode; default: upstream.base_url with ws(s):// and /realtime?intent=transcription. */
  upstream_ws_url: z.url({ protocol: /^wss?$/ }).optional(),
  vad: z
    .strictObject({
      /** RMS as a fraction of full scale at which a 20 ms frame counts as speech (client threshold 0.5 = this). */
      threshold: z.number().gt(0).lt(1).default(0.02),
      silence_ms: z.number().int().min(100).max(10_000).default(500),
      prefix_padding_ms: z.number().int().min(0).max(2000).default(300),
    })
    .prefault({}),
  /** A session with no client event for this long is closed. */
  idle_timeout_ms: z.number().int().min(100).max(3_600_000).default(60_000),
  /** Events that may wait for a slow client before the connection is dropped (1008). */
  max_client_buffer_bytes: z.number().int().min(1024).default(1024 * 1024),
  /** Uncommitted audio the gateway holds per session (segment mode); 15 MiB is 5.4 minutes of 24 kHz PCM16. */
  max_buffer_bytes: z.number().int().min(4800).default(15 * 1024 * 1024),
  /** Segments transcribed at once per session (segment mode); results are still emitted in order. */
  max_inflight_segments: z.number().int().min(1).max(32).default(4),
});

const reasoningSchema = z.union([z.enum(['none', 'on_off']), z.array(z.enum(REASONING_LEVELS)).min(1)]);

const modelSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1).optional(),
  context_window: z.number().int().positive(),
  capabilities: z.array(z.enum(MODEL_CAPABILITIES)).default([]),
  reasoning: reasoningSchema.default('none'),
  reasoning_budget: z.boolean().default(false),
});

/** One model server of an endpoint's pool (README "Upstream pools, health and failures"). */
const upstreamServerSchema = z.strictObject({
  base_url: z.url({ protocol: /^https?$/ }),
  /** Default: the upstream's own api_key_env. */
  api_key_env: z.string().min(1).optional(),
  /** Capacity relative to the pool's other servers: the choice divides a server's outstanding requests by it. */
  weight: z.number().positive().max(1000).default(1),
});

/** Passive health of each server (src/upstream/server-health.ts). */
const upstreamHealthSchema = z.strictObject({
  /** Failures in a row (no connection, or 502/503/504) that take a server out. */
  failure_threshold: z.number().int().min(1).max(100).default(3),
  /** How long a server stays out before a probe (GET {base_url}/models) may bring it back. */
  cooldown_ms: z.number().int().min(100).max(3_600_000).default(10_000),
});

type UpstreamApi = 'chat_completions' | 'responses';

/**
 * `api` is kept only when it is not the default: absent reads as chat_completions, as in endpoint records
 * stored before the field existed.
 */
function withApi<T extends object>(upstream: T, api: UpstreamApi): T & { api?: UpstreamApi } {
  return api === 'chat_completions' ? upstream : { ...upstream, api };
}

/**
 * Where an endpoint's turns go: one server (`base_url`) or a pool of servers of the same model
 * (`servers`). Normalized so both read alike: `servers` always lists the pool (a server without its own
 * api_key_env takes the upstream's) and `base_url` is the first server's, for its older readers (the
 * realtime relay's default URL, the profile-embedding cache key).
 */
const upstreamSchema = z
  .strictObject({
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    servers: z.array(upstreamServerSchema).min(1).max(64).optional(),
    model: z.string().min(1),
    api_key_env: z.string().min(1).optional(),
    health: upstreamHealthSchema.prefault({}),
    /**
     * The API the servers speak for chat turns: `chat_completions` (a Responses API request is translated
     * into one chat turn), or `responses` (a Responses API request is passed through to `{base_url}/responses`
     * unchanged but for `model`; chat endpoints only). docs/decisions.md "Upstream Responses API".
     */
    api: z.enum(['chat_completions', 'responses']).default('chat_completions'),
  })
  .superRefine((u, ctx) => {
    if (u.base_url === undefined && u.servers === undefined) {
      ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'is required (or list the pool in upstream.servers)' });
    }
    if (u.base_url !== undefined && u.servers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['servers'], message: 'cannot be set with upstream.base_url: list every server in servers' });
    }
    duplicates((u.servers ?? []).map((s) => s.base_url)).forEach((i) => ctx.addIssue({ code: 'custom', path: ['servers', i, 'base_url'], message: 'is a duplicate' }));
  })
  .transform((u) => {
    const servers = (u.servers ?? [{ base_url: u.base_url ?? '', api_key_env: undefined, weight: 1 }]).map((s) => ({
      base_url: s.base_url,
      api_key_env: s.api_key_env ?? u.api_key_env,
      weight: s.weight,
    }));
    return withApi({ base_url: servers[0]?.base_url ?? '', model: u.model, api_key_env: u.api_key_env, servers, health: u.health }, u.api);
  });

const routerProfileSchema = z.strictObject({
  description: z.string().default(''),
  examples: z.array(z.string()).default([]),
});

/** A workspace named by its id or its name (an id-less workspace has no id to write); ids.ts. */
export const workspaceRef = z.string().min(1);

export const endpointSchema = z.strictObject({
  /** Omitted: derived from the project id and the slug, the same at every start (ids.ts). */
  id: z.string().regex(UUID, 'must be a UUID').optional(),
  slug: z
    .string()
    .regex(SLUG, 'must be lowercase letters, digits and dashes')
    .refine((s) => !RESERVED_SLUGS.has(s), 'is reserved'),
  name: z.string().min(1),
  kind: z.enum(ENDPOINT_KINDS),
  tier: z.enum(ENDPOINT_TIERS),
  status: z.enum(ENDPOINT_STATUSES).default('active'),
  region: z.string().min(1).default('local'),
  workspaces: z.array(workspaceRef).optional(),
  model: modelSchema,
  upstream: upstreamSchema,
  router: routerProfileSchema.optional(),
  budget: budgetSchema.optional(),
  realtime: realtimeSchema.optional(),
  prices: pricesSchema.optional(),
}).superRefine(checkEndpointPrices);

const AUDIO_KINDS: ReadonlySet<string> = new Set(['transcription', 'speech', 'realtime']);

/**
 * Per-second audio prices only where a turn has an audio side; a money budget only on a priced endpoint
 * (its turns would cost nothing, so the budget could never be reached); an upstream Responses API only on
 * a chat endpoint (the other kinds have no Responses turn to pass through).
 */
function checkEndpointPrices(
  e: { kind: string; upstream: { api?: string }; prices?: { audio_per_second?: unknown } | undefined; budget?: Record<string, unknown> | undefined },
  ctx: z.RefinementCtx,
): void {
  if (e.upstream.api === 'responses' && e.kind !== 'chat') {
    ctx.addIssue({ code: 'custom', path: ['upstream', 'api'], message: `responses applies to chat endpoints only, not ${e.kind}` });
  }
  if (e.prices?.audio_per_second !== undefined && !AUDIO_KINDS.has(e.kind)) {
    ctx.addIssue({ code: 'custom', path: ['prices', 'audio_per_second'], message: `applies to transcription, speech and realtime endpoints, not ${e.kind}` });
  }
  if (e.prices) return;
  for (const field of ['hourly_cents', 'daily_cents', 'hard_cap_cents']) {
    if (e.budget?.[field] !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['budget', field], message: 'needs prices on the endpoint: its turns cost nothing without them' });
    }
  }
}

/** Indexes of the values seen before (the config refuses duplicate ids, slugs and servers). */
export function duplicates(values: string[]): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  values.forEach((v, i) => (seen.has(v) ? out.push(i) : seen.add(v)));
  return out;
}
