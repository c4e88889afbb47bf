/**
 * A non-streaming upstream completion, reshaped to SPEC "Chat completion response": our id, the client's
 * model string, the resolved service tier, `system_fingerprint: null`, the message fields always present,
 * reasoning only on `reasoning` / `reasoning_content`, and full usage details. Fields we do not know are
 * passed through untouched.
 */
import { ThinkSplitter } from './think-splitter.js';
import type { TurnContext, TurnUsage } from './turn-context.js';
import { estimatedTurnUsage, normalizeUsage, textTokens, turnUsageOf, usageObjectOf } from './usage.js';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

export interface NormalizedCompletion {
  readonly body: Json;
  /** The model server's usage, or (`source: estimated`) the estimate the body's usage object also carries. */
  readonly usage: TurnUsage;
}

/**
 * `promptEstimate` is asked only when the model server reported no usage: the body's usage object then
 * carries the estimate (prompt from it, completion from the generated text) instead of zeros.
 */
export function normalizeCompletion(raw: unknown, ctx: TurnContext, now: () => number, promptEstimate: () => number = () => 0): NormalizedCompletion {
  const upstream = obj(raw);
  const { id: _id, object: _object, created, model: _model, choices, usage, service_tier: _tier, system_fingerprint: _fp, ...rest } = upstream;
  const normalizedUsage = usage === undefined || usage === null ? null : normalizeUsage(usage, ctx.reasoningModel);
  const turnUsage = normalizedUsage ? turnUsageOf(normalizedUsage) : estimatedAnswerUsage(choices, promptEstimate(), ctx.reasoningModel);
  const body: Json = {
    id: ctx.requestId,
    object: 'chat.completion',
    created: typeof created === 'number' ? created : Math.floor(now() / 1000),
    model: ctx.clientModel,
    choices: Array.isArray(choices) ? choices.map((c) => normalizeChoice(obj(c), ctx)) : [],
    usage: normalizedUsage ?? usageObjectOf(turnUsage, ctx.reasoningModel),
    service_tier: ctx.lane,
    system_fingerprint: null,
    ...rest,
  };
  if (ctx.adjustedEffort !== null) body.x_adjusted_reasoning_effort = ctx.adjustedEffort;
  return { body, usage: turnUsage };
}

/** The estimate for an answer without usage: its text as sent (reasoning included, excluded or not), counted as one piece. */
function estimatedAnswerUsage(choices: unknown, promptTokens: number, reasoningModel: boolean): TurnUsage {
  let answerChars = 0;
  let reasoningChars = 0;
  for (const choice of Array.isArray(choices) ? choices : []) {
    const message = obj(obj(choice).message);
    if (typeof message.content === 'string') answerChars += message.content.length;
    if (typeof message.refusal === 'string') answerChars += message.refusal.length;
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      const fn = obj(obj(call).function);
      if (typeof fn.name === 'string') answerChars += fn.name.length;
      if (typeof fn.arguments === 'string') answerChars += fn.arguments.length;
    }
    reasoningChars += separateReasoning(message).length;
  }
  return estimatedTurnUsage(promptTokens, textTokens(answerChars), textTokens(reasoningChars), reasoningModel);
}

function normalizeChoice(choice: Json, ctx: TurnContext): Json {
  const { index, message, logprobs, finish_reason, ...rest } = choice;
  const split = ctx.splitInlineThink ? splitMessage(obj(message), obj(logprobs)) : null;
  return {
    index: typeof index === 'number' ? index : 0,
    message: normalizeMessage(obj(message), ctx, split),
    logprobs: normalizeLogprobs(split?.logprobs ?? logprobs),
    finish_reason: finish_reason ?? null,
    ...rest,
  };
}

interface SplitMessage {
  readonly reasoning: string;
  readonly content: string;
  /** The entries that deliver content, or null when the choice had none to filter (logprobs as sent). */
  readonly logprobs: Json | null;
}

/** Inline think text moves to reasoning; its tokens leave logprobs.content, which covers delivered content only. */
function splitMessage(message: Json, logprobs: Json): SplitMessage | null {
  if (typeof message.content !== 'string') return null;
  const splitter = new ThinkSplitter();
  let reasoning = '';
  let content = '';
  const entries = Array.isArray(logprobs.content) ? (logprobs.content as Json[]) : null;
  const kept: Json[] = [];
  if (entries) {
    for (const entry of entries) {
      const part = splitter.push(typeof entry.token === 'string' ? entry.token : '');
      reasoning += part.reasoning;
      content += part.content;
      if (part.content) kept.push(entry);
    }
  } else {
    const part = splitter.push(message.content);
    reasoning += part.reasoning;
    content += part.content;
  }
  const tail = splitter.flush();
  return { reasoning: reasoning + tail.reasoning, content: content + tail.content, logprobs: entries ? { ...logprobs, content: kept } : null };
}

function normalizeMessage(message: Json, ctx: TurnContext, split: SplitMessage | null): Json {
  const { role: _role, content, refusal, tool_calls, annotations, reasoning, reasoning_content, ...rest } = message;
  const separate = separateReasoning({ reasoning_content, reasoning });
  const reasoningText = separate + (split?.reasoning ?? '');
  const out: Json = {
    role: 'assistant',
    content: split ? split.content : typeof content === 'string' ? content : null,
    refusal: typeof refusal === 'string' ? refusal : null,
    tool_calls: Array.isArray(tool_calls) && tool_calls.length > 0 ? tool_calls : null,
    annotations: Array.isArray(annotations) ? annotations : [],
  };
  if (reasoningText && !ctx.excludeReasoning) {
    out.reasoning = reasoningText;
    out.reasoning_content = reasoningText;
  }
  return { ...out, ...rest };
}

/** A message's separate reasoning: `reasoning_content` first, else `reasoning` (vLLM and llama.cpp spellings); '' when none. */
export function separateReasoning(message: { readonly reasoning_content?: unknown; readonly reasoning?: unknown }): string {
  return typeof message.reasoning_content === 'string' ? message.reasoning_content : typeof message.reasoning === 'string' ? message.reasoning : '';
}

/** null, or `{content, refusal}` where an empty content list becomes null (pure refusal or tool call). */
function normalizeLogprobs(raw: unknown): Json | null {
  if (!raw || typeof raw !== 'object') return null;
  const lp = raw as Json;
  const content = Array.isArray(lp.content) && lp.content.length > 0 ? lp.content : null;
  const refusal = Array.isArray(lp.refusal) && lp.refusal.length > 0 ? lp.refusal : null;
  return { ...lp, content, refusal };
}
