/**
 * Maps the client's reasoning options onto what the endpoint's model supports (SPEC "Chat completion
 * request (body)", rows `reasoning_effort`, `reasoning`, `include_reasoning`). Pure.
 *
 * Decision (SPEC wording that pulls two ways, for docs/decisions.md):
 * - SPEC says values are "mapped onto the model's levels" and also that "a model limited to a list
 *   refuses other values with unsupported_value". We map every value except `none` (and
 *   `reasoning.enabled: false`): a model with a level list always thinks, so only "thinking off" is a
 *   value it cannot honour. That refusal lists the model's levels.
 * - "xhigh and max take the highest" and "others take the nearest": a level the model lists is honoured
 *   as sent (xhigh stays xhigh on a model listing xhigh and max); an unlisted xhigh or max takes the
 *   highest level, an unlisted minimal the lowest, anything else the nearest in the order
 *   minimal < low < medium < high < xhigh < max, ties to the higher level.
 * - On an on/off model `none` and `minimal` turn thinking off; every other value turns it on, sent as
 *   `medium`. `reasoning.enabled: true` alone counts as a request for `medium`.
 * - "Thinking off together with max_tokens" is refused whether the client asked for off or the mapping
 *   produced it (minimal on an on/off model): a budget for thinking that does not happen is a request
 *   the gateway cannot serve as specified (SPEC "What the service does" 4).
 * - Contradictions inside the request are refused before model support is looked at, so the client
 *   hears about its own mistake first.
 * - On a non-reasoning model every value of `reasoning_effort`, `none` included, is refused: SPEC
 *   refuses "the parameter".
 */
import type { ModelConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import type { ReasoningEffort } from '../../schemas/chat-request.js';
import { REASONING_LEVELS } from './reasoning-levels.js';

type Level = (typeof REASONING_LEVELS)[number];

export interface ReasoningPlan {
  /** The effort to send upstream; null when the client asked for no effort at all (nothing to send or rewrite). */
  effort: ReasoningEffort | null;
  /** What the client sent when `effort` differs from it: the response then reports x_adjusted_reasoning_effort. */
  adjustedFrom: ReasoningEffort | null;
  /** The model is asked not to think (on/off models only; a non-reasoning model has nothing to turn off). */
  thinkingOff: boolean;
  /** Reasoning runs and is billed but is left out of the response. */
  exclude: boolean;
}

/**
 * The request fields this mapping reads: a chat request, or what the router keeps of one to test an
 * endpoint's model without a turn (core/routing/eligibility.ts).
 */
export interface ReasoningOptions {
  readonly reasoning_effort?: ReasoningEffort | undefined;
  readonly reasoning?:
    | { readonly effort?: ReasoningEffort | undefined; readonly enabled?: boolean | undefined; readonly max_tokens?: number | undefined; readonly exclude?: boolean | undefined }
    | undefined;
  readonly include_reasoning?: boolean | undefined;
}

/** Which request field carried the effort, so a refusal names what the client actually sent. */
interface Requested {
  effort: ReasoningEffort;
  param: 'reasoning_effort' | 'reasoning.effort' | 'reasoning.enabled';
}

export function resolveReasoning(req: ReasoningOptions, model: ModelConfig): ReasoningPlan {
  const requested = requestedEffort(req);
  const budget = req.reasoning?.max_tokens;
  const exclude = excludesReasoning(req);
  if (requested?.effort === 'none' && budget !== undefined) refuseBudgetWithoutThinking('thinking is off');

  if (model.reasoning === 'none') {
    refuseOnNonReasoningModel(req);
    return { effort: null, adjustedFrom: null, thinkingOff: false, exclude };
  }
  if (budget !== undefined && !model.reasoning_budget) {
    throw new GatewayError('unsupported_parameter', {
      param: 'reasoning.max_tokens',
      message: "reasoning.max_tokens is not supported: this endpoint's model cannot enforce a thinking budget.",
    });
  }
  if (!requested) return { effort: null, adjustedFrom: null, thinkingOff: false, exclude };

  const effort = model.reasoning === 'on_off' ? onOff(requested.effort) : onLevels(requested, model.reasoning);
  const thinkingOff = effort === 'none';
  if (thinkingOff && budget !== undefined) refuseBudgetWithoutThinking(`this model maps ${requested.effort} to thinking off`);
  // enabled: true stands for medium, so a model serving another level reports it like any mapped value.
  const adjustedFrom = effort !== requested.effort ? requested.effort : null;
  return { effort, adjustedFrom, thinkingOff, exclude };
}

/**
 * reasoning.exclude / include_reasoning: false, whatever the model: the reasoning runs and is billed but
 * is left out of the answer. `reasoning.exclude` wins when both are sent (SPEC row `include_reasoning`).
 */
export function excludesReasoning(req: ReasoningOptions): boolean {
  return req.reasoning?.exclude ?? req.include_reasoning === false;
}

/** Reads the three ways of asking for an effort and refuses combinations that contradict each other. */
function requestedEffort(req: ReasoningOptions): Requested | null {
  const top = req.reasoning_effort;
  const nested = req.reasoning?.effort;
  const enabled = req.reasoning?.enabled;
  if (top !== undefined && nested !== undefined && top !== nested) {
    throw new GatewayError('invalid_request', {
      param: 'reasoning.effort',
      message: `reasoning.effort (${nested}) and reasoning_effort (${top}) must be equal when both are sent.`,
    });
  }
  const effort = top ?? nested;
  if (enabled !== undefined && effort !== undefined && enabled !== (effort !== 'none')) {
    throw new GatewayError('invalid_request', {
      param: 'reasoning.enabled',
      message: `reasoning.enabled ${enabled} contradicts effort ${effort}; send enabled false only with effort none, and enabled true only with an effort other than none.`,
    });
  }
  if (top !== undefined) return { effort: top, param: 'reasoning_effort' };
  if (nested !== undefined) return { effort: nested, param: 'reasoning.effort' };
  if (enabled !== undefined) return { effort: enabled ? 'medium' : 'none', param: 'reasoning.enabled' };
  return null;
}

function refuseOnNonReasoningModel(req: ReasoningOptions): void {
  const sent: string[] = [];
  if (req.reasoning_effort !== undefined) sent.push('reasoning_effort');
  if (req.reasoning?.effort !== undefined) sent.push('reasoning.effort');
  if (req.reasoning?.enabled !== undefined) sent.push('reasoning.enabled');
  if (req.reasoning?.max_tokens !== undefined) sent.push('reasoning.max_tokens');
  const param = sent[0];
  if (param === undefined) return;
  throw new GatewayError('unsupported_parameter', {
    param,
    message: `${param} is not supported: this endpoint's model does not reason. reasoning.exclude and include_reasoning are accepted.`,
  });
}

function refuseBudgetWithoutThinking(why: string): never {
  throw new GatewayError('invalid_request', {
    param: 'reasoning.max_tokens',
    message: `reasoning.max_tokens caps thinking, but ${why}; drop one of them.`,
  });
}

function onOff(effort: ReasoningEffort): ReasoningEffort {
  return effort === 'none' || effort === 'minimal' ? 'none' : 'medium';
}

const RANK: Readonly<Record<Level, number>> = Object.fromEntries(REASONING_LEVELS.map((l, i) => [l, i])) as Record<Level, number>;

function onLevels(requested: Requested, listed: readonly Level[]): Level {
  const levels = [...new Set(listed)].sort((a, b) => RANK[a] - RANK[b]);
  const lowest = levels[0];
  const highest = levels[levels.length - 1];
  if (lowest === undefined || highest === undefined) throw new Error('a reasoning level list is never empty (config schema)');
  const effort = requested.effort;
  if (effort === 'none') {
    throw new GatewayError('unsupported_value', {
      param: requested.param,
      message: `${requested.param === 'reasoning.enabled' ? 'reasoning.enabled false' : `${requested.param} none`} is not supported: this endpoint's model always reasons. Supported values: ${levels.join(', ')} (minimal, xhigh and max map onto them; other levels take the nearest).`,
    });
  }
  if (levels.includes(effort)) return effort;
  if (effort === 'minimal') return lowest;
  if (effort === 'xhigh' || effort === 'max') return highest;
  // Scanning upwards with <= lets the higher of two equally near levels win.
  let best: Level = lowest;
  for (const level of levels) {
    if (Math.abs(RANK[level] - RANK[effort]) <= Math.abs(RANK[best] - RANK[effort])) best = level;
  }
  return best;
}
