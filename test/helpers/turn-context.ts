import type { TurnContext } from '../../src/core/chat/turn-context.js';

/** A turn of the re-stamp tests: an id and a client model that need JSON escaping, the flex lane. */
export const RESTAMP_CONTEXT: TurnContext = {
  requestId: 'chatcmpl-0123456789abcdef01234567',
  clientModel: 'client "model"',
  lane: 'flex',
  reasoningModel: false,
  excludeReasoning: false,
  splitInlineThink: false,
  adjustedEffort: null,
  streamUsage: true,
};
