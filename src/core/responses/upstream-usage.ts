/**
 * Usage of a turn an upstream Responses API server answered itself (`upstream.api: responses`, passed
 * through unchanged): read from the Response object's `usage`, buffered or from the stream's terminal
 * event (response.completed, response.incomplete, response.failed), for the usage ledger.
 */
import type { TurnUsage } from '../chat/turn-context.js';

/** The streamed events whose `response` is the final Response object. */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed']);

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** A Response object's usage; null when it reports none. */
export function usageOfResponse(response: unknown): TurnUsage | null {
  if (!response || typeof response !== 'object') return null;
  const usage = (response as Record<string, unknown>).usage;
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  const input = (u.input_tokens_details ?? {}) as Record<string, unknown>;
  const output = (u.output_tokens_details ?? {}) as Record<string, unknown>;
  return {
    promptTokens: count(u.input_tokens),
    completionTokens: count(u.output_tokens),
    cachedTokens: count(input.cached_tokens),
    reasoningTokens: typeof output.reasoning_tokens === 'number' ? count(output.reasoning_tokens) : null,
    source: 'upstream',
  };
}

/** The event's type: its `event:` field, else the `type` at the head of its data. */
export function eventType(event: { readonly event: string | null; readonly data: string }): string | null {
  if (event.event !== null) return event.event;
  const match = /^\s*\{\s*"type"\s*:\s*"([^"]+)"/.exec(event.data);
  return match ? (match[1] ?? null) : null;
}

/** The usage a terminal streamed event carries (`{type, response: {usage}}`); null for other events. */
export function usageOfEvent(event: { readonly event: string | null; readonly data: string }): { terminal: boolean; usage: TurnUsage | null } {
  const type = eventType(event);
  if (type === null || !TERMINAL_EVENTS.has(type)) return { terminal: false, usage: null };
  try {
    const parsed = JSON.parse(event.data) as Record<string, unknown>;
    return { terminal: true, usage: usageOfResponse(parsed.response) };
  } catch {
    return { terminal: true, usage: null };
  }
}

/** The last `sequence_number` in an event's data (an error event the gateway adds follows it). */
export function sequenceOf(data: string): number | null {
  const match = /"sequence_number"\s*:\s*(\d+)/.exec(data);
  return match ? Number(match[1]) : null;
}
