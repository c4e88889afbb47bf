import type { ChatRequestView, ToolSpec } from './chat-request.js';
import { base62Id, fnv1a, mix32 } from './hash.js';
import { isRecord, utf8Length } from './json.js';
import type { Knobs } from './knobs.js';
import { buildLogprobs, type LogprobEntry } from './logprobs.js';
import { schemaSample } from './scripted.js';
import { generateWords, tokenizeText } from './text-generation.js';

export type { LogprobEntry, TopLogprob } from './logprobs.js';

// Pure planning: request + knobs -> everything a turn will contain. Both the
// JSON response and the SSE stream render from the same plan, which is what
// keeps streamed and non-streamed output identical.

export const DEFAULT_CONTENT_TOKENS = 16;
export const DEFAULT_REASONING_TOKENS = 8;
/** Usage charge per tool call; arbitrary but fixed so tests can assert it. */
export const TOOL_CALL_TOKENS = 10;
export const THINK_OPEN = '<think>';
export const THINK_CLOSE = '</think>';
const TOOL_RESULT_PREFIX = ['Tool', ' result', ' received:'];
const ECHO_PREFIX = 'echo:';

// Salts separate the random streams so reasoning words don't mirror content words.
const SALT_REASONING = 0x52454153;
const SALT_TOOL = 0x544f4f4c;
const SALT_TOP = 0x544f5050;

export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface PlannedToolCall {
  id: string;
  name: string;
  /** JSON text, as OpenAI sends it. */
  arguments: string;
}

export interface PlannedChoice {
  index: number;
  /** Separate-channel (reasoning_content) tokens actually delivered. */
  reasoning: string[];
  /** Content-channel tokens actually delivered (includes <think> markup in inline mode). */
  content: string[];
  /** Joined content; null only when the turn is a tool call with no content tokens. */
  contentText: string | null;
  toolCalls: PlannedToolCall[];
  finishReason: FinishReason;
  /** One entry per content token when logprobs were requested; null otherwise or for tool calls. */
  logprobs: LogprobEntry[] | null;
  completionTokens: number;
  reasoningTokens: number;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export interface PlannedTurn {
  model: string;
  logprobsRequested: boolean;
  choices: PlannedChoice[];
  usage: ChatUsage;
}

export interface PlanOptions {
  /** Whether the model is a reasoning model (decided by the server's registry). */
  reasons: boolean;
}

/** ceil(UTF-8 bytes / 4) over all message text, plus 3 per message for role framing. */
export function countPromptTokens(messageTexts: readonly string[]): number {
  let bytes = 0;
  for (const text of messageTexts) bytes += utf8Length(text);
  return Math.ceil(bytes / 4) + 3 * messageTexts.length;
}

/** Sample value per JSON-schema type; `enum` wins so the arguments validate. */
function sampleValue(schema: unknown): unknown {
  if (!isRecord(schema)) return null;
  const choices = schema['enum'];
  if (Array.isArray(choices) && choices.length > 0) return choices[0];
  const rawType = schema['type'];
  const type = Array.isArray(rawType) ? rawType.find((t) => t !== 'null') : rawType;
  if (type === 'string') return 'sample';
  if (type === 'number' || type === 'integer') return 1;
  if (type === 'boolean') return true;
  return null;
}

export function sampleArguments(parameters: unknown): string {
  const args: Record<string, unknown> = {};
  const props = isRecord(parameters) ? parameters['properties'] : undefined;
  if (isRecord(props)) for (const [key, schema] of Object.entries(props)) args[key] = sampleValue(schema);
  return JSON.stringify(args);
}

/** The tool the assistant will call, or null for a plain content answer. */
function chosenTool(req: ChatRequestView): ToolSpec | null {
  // A tool result just came back: answer in prose so the round trip terminates.
  if (req.tools.length === 0 || req.toolChoice === 'none' || req.lastRole === 'tool') return null;
  const choice = req.toolChoice;
  if (typeof choice === 'object') return req.tools.find((t) => t.name === choice.name) ?? null;
  const scripted = req.scriptedCall;
  if (scripted) return req.tools.find((t) => t.name === scripted.name) ?? null;
  return req.tools[0] ?? null;
}

/** Cuts just before the earliest stop sequence; a token straddling it is trimmed. */
export function applyStop(tokens: readonly string[], stops: readonly string[]): { tokens: string[]; stopped: boolean } {
  if (stops.length === 0) return { tokens: tokens.slice(), stopped: false };
  const text = tokens.join('');
  let cut = -1;
  for (const stop of stops) {
    const at = text.indexOf(stop);
    if (at !== -1 && (cut === -1 || at < cut)) cut = at;
  }
  if (cut === -1) return { tokens: tokens.slice(), stopped: false };
  const out: string[] = [];
  let pos = 0;
  for (const token of tokens) {
    if (pos >= cut) break;
    out.push(pos + token.length <= cut ? token : token.slice(0, cut - pos));
    pos += token.length;
  }
  return { tokens: out, stopped: true };
}

function contentTokensFor(req: ChatRequestView, knobs: Knobs, seed: number): string[] {
  const count = knobs.tokens ?? DEFAULT_CONTENT_TOKENS;
  if (req.lastRole === 'tool') {
    return [...TOOL_RESULT_PREFIX, ...generateWords(seed, Math.max(0, count - TOOL_RESULT_PREFIX.length), true)].slice(0, count);
  }
  // Echo lets tests choose exact content (e.g. to exercise stop sequences).
  if (req.lastUserText.startsWith(ECHO_PREFIX)) return tokenizeText(req.lastUserText.slice(ECHO_PREFIX.length).trim());
  // Structured output: a value valid against the schema, as a real model constrained to it would give.
  if (req.responseSchema) return tokenizeText(JSON.stringify(schemaSample(req.responseSchema)));
  return generateWords(seed, count);
}

function planChoice(req: ChatRequestView, knobs: Knobs, opts: PlanOptions, baseSeed: number, index: number): PlannedChoice {
  const seed = mix32(baseSeed, index);
  const reasoningCount = opts.reasons && !req.reasoningDisabled ? (knobs.reasoningTokens ?? DEFAULT_REASONING_TOKENS) : 0;
  const reasoningAll = generateWords(mix32(seed, SALT_REASONING), reasoningCount);
  const inline = knobs.inlineThink && reasoningCount > 0;
  const tool = chosenTool(req);
  const answer = tool ? { tokens: [], stopped: false } : applyStop(contentTokensFor(req, knobs, seed), req.stop);

  // Budget is spent in generation order: reasoning (or inline think block), then the answer.
  let remaining = req.maxTokens ?? Number.POSITIVE_INFINITY;
  const take = (tokens: readonly string[]): string[] => {
    const taken = tokens.slice(0, remaining);
    remaining -= taken.length;
    return taken;
  };
  const thinkBlock = inline ? [THINK_OPEN, ...reasoningAll, THINK_CLOSE] : [];
  const reasoning = inline ? [] : take(reasoningAll);
  const inlineDelivered = take(thinkBlock);
  let truncated = reasoning.length < (inline ? 0 : reasoningAll.length) || inlineDelivered.length < thinkBlock.length;
  const answerDelivered = take(answer.tokens);
  truncated ||= answerDelivered.length < answer.tokens.length;

  const toolCalls: PlannedToolCall[] = [];
  if (tool && !truncated) {
    // A tool call is atomic: half a JSON argument object is useless, so it either fits or the turn is cut.
    if (remaining >= TOOL_CALL_TOKENS) {
      const args = req.scriptedCall?.name === tool.name ? req.scriptedCall.arguments : sampleArguments(tool.parameters);
      toolCalls.push({ id: `call_${base62Id(mix32(seed, SALT_TOOL), 24)}`, name: tool.name, arguments: args });
    } else {
      truncated = true;
    }
  }

  const content = [...inlineDelivered, ...answerDelivered];
  const contentText = toolCalls.length > 0 && content.length === 0 ? null : content.join('');
  const inlineReasoning = inlineDelivered.filter((t) => t !== THINK_OPEN && t !== THINK_CLOSE).length;
  return {
    index,
    reasoning,
    content,
    contentText,
    toolCalls,
    finishReason: truncated ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
    logprobs: req.logprobs && contentText !== null ? buildLogprobs(content, req.topLogprobs, mix32(seed, SALT_TOP)) : null,
    completionTokens: reasoning.length + content.length + toolCalls.length * TOOL_CALL_TOKENS,
    reasoningTokens: reasoning.length + inlineReasoning,
  };
}

export function planChatTurn(req: ChatRequestView, knobs: Knobs, opts: PlanOptions): PlannedTurn {
  const baseSeed = mix32(fnv1a(req.lastUserText), fnv1a(req.seed));
  const choices: PlannedChoice[] = [];
  for (let i = 0; i < req.n; i++) choices.push(planChoice(req, knobs, opts, baseSeed, i));
  const promptTokens = countPromptTokens(req.messageTexts);
  let completion = 0;
  let reasoning = 0;
  for (const c of choices) {
    completion += c.completionTokens;
    reasoning += c.reasoningTokens;
  }
  return {
    model: req.model,
    logprobsRequested: req.logprobs,
    choices,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
      prompt_tokens_details: { cached_tokens: knobs.cachedTokens },
      completion_tokens_details: { reasoning_tokens: reasoning },
    },
  };
}

/** Streamed token events of one choice: one per reasoning/content token, one per tool call. */
export function tokenEventCount(choice: PlannedChoice): number {
  return choice.reasoning.length + choice.content.length + choice.toolCalls.length;
}

/** Delay a non-streamed response waits, matching what streaming the same turn would take. */
export function totalDelayMs(turn: PlannedTurn, knobs: Knobs): number {
  let events = 0;
  for (const c of turn.choices) events = Math.max(events, tokenEventCount(c));
  if (events === 0) return 0;
  return (knobs.firstTokenDelayMs ?? knobs.delayMs) + knobs.delayMs * (events - 1);
}

export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      reasoning_content?: string;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    };
    logprobs: { content: LogprobEntry[] | null; refusal: null } | null;
    finish_reason: FinishReason;
  }[];
  usage: ChatUsage;
  system_fingerprint: 'sim';
}

export function renderCompletion(turn: PlannedTurn, id: string, created: number): ChatCompletionBody {
  return {
    id,
    object: 'chat.completion',
    created,
    model: turn.model,
    choices: turn.choices.map((c) => {
      const message: ChatCompletionBody['choices'][number]['message'] = { role: 'assistant', content: c.contentText };
      if (c.reasoning.length > 0) message.reasoning_content = c.reasoning.join('');
      if (c.toolCalls.length > 0) {
        message.tool_calls = c.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
      }
      return {
        index: c.index,
        message,
        logprobs: turn.logprobsRequested ? { content: c.logprobs, refusal: null } : null,
        finish_reason: c.finishReason,
      };
    }),
    usage: turn.usage,
    system_fingerprint: 'sim',
  };
}
