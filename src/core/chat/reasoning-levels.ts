/**
 * The reasoning levels a model can list in its config (`model.reasoning`), in the order the mapping of
 * reasoning.ts walks: minimal < low < medium < high < xhigh < max. Declared in core so the domain owns its
 * vocabulary; the config schema (config/endpoint.ts) and the wire schema (schemas/chat-request.ts) use it.
 */
export const REASONING_LEVELS = ['minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
