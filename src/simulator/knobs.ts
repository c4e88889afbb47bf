import { SimError } from './errors.js';
import { isRecord } from './json.js';

/** Per-request behaviour overrides, from `x-sim-*` headers or the body's `sim` object. */
export interface Knobs {
  delayMs: number;
  /** null: use delayMs for the first token too. */
  firstTokenDelayMs: number | null;
  /** null: default length (16 content tokens). */
  tokens: number | null;
  /** null: default reasoning length (8) for reasoning models. */
  reasoningTokens: number | null;
  errorStatus: number | null;
  errorCode: string | null;
  /** Seconds for a Retry-After header on simulated errors. */
  retryAfter: number | null;
  failAfter: number | null;
  inlineThink: boolean;
  cachedTokens: number;
  /** Tool misbehaviour for the gateway's harness (tool-misbehaviour.ts). */
  toolCallAsText: boolean;
  malformedToolCalls: number;
  undeclaredTool: string | null;
  /** Embeddings: answer in this format whatever encoding_format asked, as servers that ignore it do. */
  embeddingFormat: 'float' | 'base64' | null;
  /** Embeddings: answer the default size whatever `dimensions` asked, as servers that ignore it do. */
  ignoreDimensions: boolean;
}

export const DEFAULT_KNOBS: Readonly<Knobs> = Object.freeze({
  delayMs: 0,
  firstTokenDelayMs: null,
  tokens: null,
  reasoningTokens: null,
  errorStatus: null,
  errorCode: null,
  retryAfter: null,
  failAfter: null,
  inlineThink: false,
  cachedTokens: 0,
  toolCallAsText: false,
  malformedToolCalls: 0,
  undeclaredTool: null,
  embeddingFormat: null,
  ignoreDimensions: false,
});

type IntKnob = 'delayMs' | 'firstTokenDelayMs' | 'tokens' | 'reasoningTokens' | 'errorStatus' | 'retryAfter' | 'failAfter' | 'cachedTokens' | 'malformedToolCalls';

interface KnobSpec {
  header: string;
  bodyKey: string;
  field: IntKnob | 'errorCode' | 'inlineThink' | 'toolCallAsText' | 'undeclaredTool' | 'embeddingFormat' | 'ignoreDimensions';
  min?: number;
  max?: number;
}

// Caps keep a typo (an extra zero) from wedging a test run for minutes.
const SPECS: readonly KnobSpec[] = [
  { header: 'x-sim-delay-ms', bodyKey: 'delay_ms', field: 'delayMs', max: 60_000 },
  { header: 'x-sim-first-token-delay-ms', bodyKey: 'first_token_delay_ms', field: 'firstTokenDelayMs', max: 60_000 },
  { header: 'x-sim-tokens', bodyKey: 'tokens', field: 'tokens', max: 100_000 },
  { header: 'x-sim-reasoning-tokens', bodyKey: 'reasoning_tokens', field: 'reasoningTokens', max: 100_000 },
  { header: 'x-sim-error-status', bodyKey: 'error_status', field: 'errorStatus', min: 100, max: 599 },
  { header: 'x-sim-error-code', bodyKey: 'error_code', field: 'errorCode' },
  { header: 'x-sim-retry-after', bodyKey: 'retry_after', field: 'retryAfter', max: 86_400 },
  { header: 'x-sim-fail-after', bodyKey: 'fail_after', field: 'failAfter', max: 100_000 },
  { header: 'x-sim-inline-think', bodyKey: 'inline_think', field: 'inlineThink' },
  { header: 'x-sim-cached-tokens', bodyKey: 'cached_tokens', field: 'cachedTokens', max: 10_000_000 },
  { header: 'x-sim-tool-call-as-text', bodyKey: 'tool_call_as_text', field: 'toolCallAsText' },
  { header: 'x-sim-malformed-tool-calls', bodyKey: 'malformed_tool_calls', field: 'malformedToolCalls', max: 100 },
  { header: 'x-sim-undeclared-tool', bodyKey: 'undeclared_tool', field: 'undeclaredTool' },
  { header: 'x-sim-embedding-format', bodyKey: 'embedding_format', field: 'embeddingFormat' },
  { header: 'x-sim-ignore-dimensions', bodyKey: 'ignore_dimensions', field: 'ignoreDimensions' },
];

function bad(spec: KnobSpec, raw: unknown): SimError {
  return new SimError(400, `Invalid simulator knob ${spec.header}: ${JSON.stringify(raw)}`, 'invalid_sim_knob', spec.header);
}

function toInt(spec: KnobSpec, raw: unknown): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < (spec.min ?? 0) || n > (spec.max ?? Number.MAX_SAFE_INTEGER)) throw bad(spec, raw);
  return n;
}

function toBool(spec: KnobSpec, raw: unknown): boolean {
  if (raw === true || raw === 1) return true;
  if (raw === false || raw === 0) return false;
  if (typeof raw === 'string') {
    const v = raw.trim().toLowerCase();
    if (v === '1' || v === 'true' || v === 'yes') return true;
    if (v === '0' || v === 'false' || v === 'no' || v === '') return false;
  }
  throw bad(spec, raw);
}

/**
 * Headers win over the body's `sim` object so a test can override a shared
 * fixture body per call. Throws SimError(400) on malformed values: a silently
 * ignored typo would make a test pass for the wrong reason.
 * `headers` must have lowercased keys (uWS already lowercases them).
 */
export function parseKnobs(headers: Readonly<Record<string, string>>, body: unknown): Knobs {
  const sim = isRecord(body) && isRecord(body['sim']) ? body['sim'] : null;
  // Fast path: the benchmark baseline sends neither.
  if (sim === null && !hasSimHeader(headers)) return { ...DEFAULT_KNOBS };
  const knobs: Knobs = { ...DEFAULT_KNOBS };
  for (const spec of SPECS) {
    const header = headers[spec.header];
    const raw: unknown = header !== undefined ? header : sim?.[spec.bodyKey];
    if (raw === undefined || raw === null) continue;
    if (spec.field === 'errorCode' || spec.field === 'undeclaredTool') {
      if (typeof raw !== 'string' || raw.length === 0) throw bad(spec, raw);
      knobs[spec.field] = raw.trim();
    } else if (spec.field === 'embeddingFormat') {
      if (raw !== 'float' && raw !== 'base64') throw bad(spec, raw);
      knobs.embeddingFormat = raw;
    } else if (spec.field === 'inlineThink' || spec.field === 'toolCallAsText' || spec.field === 'ignoreDimensions') {
      knobs[spec.field] = toBool(spec, raw);
    } else {
      knobs[spec.field] = toInt(spec, raw);
    }
  }
  return knobs;
}

function hasSimHeader(headers: Readonly<Record<string, string>>): boolean {
  for (const key in headers) if (key.startsWith('x-sim-')) return true;
  return false;
}
