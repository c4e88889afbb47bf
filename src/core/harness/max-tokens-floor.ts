/**
 * max_tokens floor (X-Service-Augment-Max-Tokens-Floor). Agents often send a tiny max (16, 50) that cuts
 * a tool call's JSON or, on a reasoning model, is spent on thinking before any answer. With the floor on,
 * an explicit max below the floor is raised to it: MAX_TOKENS_FLOOR, or REASONING_MAX_TOKENS_FLOOR on a
 * reasoning model. Never past the room the byte bound of the input proves is left in the context window,
 * so the floor never turns a request that fitted into a 400. No max sent: nothing to raise (the remaining
 * window is already the limit). The field raised is the one in effect (max_completion_tokens wins). Pure.
 */
type Json = Record<string, unknown>;

export const MAX_TOKENS_FLOOR = 256;
export const REASONING_MAX_TOKENS_FLOOR = 1024;

/** `inputUpperBound`: tokens the input cannot exceed (its UTF-8 bytes plus framing; context-window.ts). */
export function raiseMaxTokens(body: Json, opts: { reasoningModel: boolean; window: number; inputUpperBound: number }): Json | null {
  const field = typeof body.max_completion_tokens === 'number' ? 'max_completion_tokens' : typeof body.max_tokens === 'number' ? 'max_tokens' : null;
  if (field === null) return null;
  const asked = body[field] as number;
  const floor = opts.reasoningModel ? REASONING_MAX_TOKENS_FLOOR : MAX_TOKENS_FLOOR;
  const raised = Math.min(floor, opts.window - opts.inputUpperBound);
  return raised > asked ? { ...body, [field]: raised } : null;
}
