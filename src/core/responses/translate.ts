/**
 * A Responses API request as ONE chat completion turn, and the chat answer back as a Response object
 * (docs/decisions.md "Responses and conversations"). Only what the request says is translated: nothing is
 * added to the turn beyond the mapping of each field.
 */
import { GatewayError } from '../../errors.js';
import type { ResponseRequest } from '../../schemas/responses-request.js';
import { resolveServiceTier } from '../chat/service-tier.js';
import { chatMessages, type Item, type NewId } from './input-items.js';
import { chatToolsOf } from './tools.js';

const LOGPROBS = 'message.output_text.logprobs';

/**
 * A function_call_output answers a function_call made before it, in the replayed context or earlier in
 * the input: otherwise the chat turn would hold a tool message answering no call, which model servers
 * refuse or misread. 400 naming the item, as OpenAI refuses it.
 */
function checkCallOutputs(context: readonly Item[], input: readonly Item[]): void {
  const calls = new Set<unknown>();
  for (const item of context) if (item.type === 'function_call') calls.add(item.call_id);
  input.forEach((item, i) => {
    if (item.type === 'function_call') calls.add(item.call_id);
    else if (item.type === 'function_call_output' && !calls.has(item.call_id)) {
      throw new GatewayError('invalid_request', {
        param: `input[${i}].call_id`,
        message: `input[${i}] is a function_call_output for call_id ${JSON.stringify(item.call_id)}, but no function_call with that call_id comes before it (in the input, the previous_response_id chain or the conversation).`,
      });
    }
  });
}

/** The chat body of the turn: `context` (replayed chain or conversation items) then the new input. */
export function chatBodyOf(request: ResponseRequest, context: readonly Item[], input: readonly Item[]): Record<string, unknown> {
  checkCallOutputs(context, input);
  const messages: Item[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  // concat, not push(...): spread into arguments, 125,000 input items overflowed the stack (a 500).
  const body: Record<string, unknown> = { model: request.model, messages: messages.concat(chatMessages(context), chatMessages(input)) };
  if (request.tools && request.tools.length > 0) body.tools = chatToolsOf(request.tools).tools;
  if (request.tool_choice !== undefined) body.tool_choice = chatToolChoice(request.tool_choice);
  if (request.parallel_tool_calls !== undefined && request.parallel_tool_calls !== null) body.parallel_tool_calls = request.parallel_tool_calls;
  if (request.max_output_tokens !== undefined && request.max_output_tokens !== null) body.max_tokens = request.max_output_tokens;
  if (request.temperature !== undefined && request.temperature !== null) body.temperature = request.temperature;
  if (request.top_p !== undefined && request.top_p !== null) body.top_p = request.top_p;
  if (request.reasoning?.effort) body.reasoning_effort = request.reasoning.effort;
  const format = request.text?.format;
  if (format && format.type !== 'text') body.response_format = chatFormat(format);
  if (request.user !== undefined) body.user = request.user;
  if (request.text?.verbosity) body.verbosity = request.text.verbosity;
  // Fields the chat API shares: the model server applies them (or ignores what it has no use for).
  for (const field of ['prompt_cache_key', 'prompt_cache_retention', 'safety_identifier', 'service_tier'] as const) {
    const value = request[field];
    if (value !== undefined && value !== null) body[field] = value;
  }
  // OpenAI returns token logprobs only when `include` asks for them; top_logprobs alone changes nothing.
  if (request.include?.includes(LOGPROBS)) {
    body.logprobs = true;
    if (request.top_logprobs !== undefined && request.top_logprobs !== null) body.top_logprobs = request.top_logprobs;
  }
  if (request.stream) {
    body.stream = true;
    // The Response's usage needs the turn's usage chunk.
    body.stream_options = { include_usage: true };
  }
  return body;
}

function chatToolChoice(choice: NonNullable<ResponseRequest['tool_choice']>): unknown {
  if (typeof choice === 'string') return choice;
  if (choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  throw new GatewayError('unsupported_value', { param: 'tool_choice', message: 'tool_choice must be auto, none, required or {type: "function", name}.' });
}

function chatFormat(format: Record<string, unknown>): Record<string, unknown> {
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    // OpenAI requires the schema on this API; without it the model would answer prose under a json_schema label.
    if (format.schema === null || typeof format.schema !== 'object' || Array.isArray(format.schema)) {
      throw new GatewayError('invalid_request', { param: 'text.format.schema', message: 'text.format.schema must be a JSON Schema object when text.format.type is json_schema.' });
    }
    const schema: Record<string, unknown> = { name: format.name, schema: format.schema };
    if (format.description !== undefined) schema.description = format.description;
    if (format.strict !== undefined && format.strict !== null) schema.strict = format.strict;
    return { type: 'json_schema', json_schema: schema };
  }
  throw new GatewayError('unsupported_value', { param: 'text.format.type', message: 'text.format.type must be text, json_object or json_schema.' });
}

export interface ResponseUsage {
  readonly input_tokens: number;
  /** `cache_write_tokens` is required by OpenAI's current schema: 0 when the model server reports none. */
  readonly input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  readonly output_tokens: number;
  readonly output_tokens_details: { reasoning_tokens: number };
  readonly total_tokens: number;
}

/** A chat `usage` object as the Response's usage. */
export function responseUsage(usage: unknown): ResponseUsage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
  const input = num(u.prompt_tokens);
  const output = num(u.completion_tokens);
  const details = u.prompt_tokens_details as Record<string, unknown> | undefined;
  const reasoning = num((u.completion_tokens_details as Record<string, unknown> | undefined)?.reasoning_tokens);
  const inputDetails = { cached_tokens: num(details?.cached_tokens), cache_write_tokens: num(details?.cache_write_tokens) };
  return { input_tokens: input, input_tokens_details: inputDetails, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: input + output };
}

export function messageItem(id: string, text: string, status: string, logprobs: readonly unknown[] = []): Item {
  return { type: 'message', id, status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs }] };
}

/** `namespace`: the function came from a namespace tool (core/responses/tools.ts). */
export function functionCallItem(id: string, callId: string, name: string, args: string, status: string, namespace?: string): Item {
  const item: Item = { type: 'function_call', id, call_id: callId, name, arguments: args, status };
  if (namespace !== undefined) item.namespace = namespace;
  return item;
}

/** A chat choice's (or delta's) `logprobs.content` entries: the same shape as Responses' output_text logprobs. */
export function logprobEntries(choice: Item): unknown[] {
  const logprobs = choice.logprobs as Item | null | undefined;
  return logprobs && Array.isArray(logprobs.content) ? logprobs.content : [];
}

export interface TurnOutput {
  readonly output: Item[];
  readonly usage: ResponseUsage | null;
  /** `length`: the answer stopped at max_output_tokens (status `incomplete`). */
  readonly finishReason: string | null;
}

/** The output items of a non-streamed chat completion: the message (text or refusal), then function calls. */
export function outputOfCompletion(completion: Record<string, unknown>, newId: NewId, namespaces: ReadonlyMap<string, string>): TurnOutput {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Item[]) : [];
  const choice = choices[0] ?? {};
  const message = (choice.message ?? {}) as Item;
  const output: Item[] = [];
  const finishReason = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
  // An answer cut at max_output_tokens leaves its items `incomplete`, as OpenAI marks them.
  const status = statusOf(finishReason);
  if (typeof message.refusal === 'string' && message.refusal !== '') {
    output.push({ type: 'message', id: newId('msg_'), status, role: 'assistant', content: [{ type: 'refusal', refusal: message.refusal }] });
  } else if (typeof message.content === 'string' && message.content !== '') {
    output.push(messageItem(newId('msg_'), message.content, status, logprobEntries(choice)));
  }
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Item[]) : [];
  for (const call of calls) {
    const fn = (call.function ?? {}) as Item;
    const name = String(fn.name ?? '');
    output.push(functionCallItem(newId('fc_'), String(call.id ?? ''), name, String(fn.arguments ?? ''), status, namespaces.get(name)));
  }
  return { output, usage: responseUsage(completion.usage), finishReason };
}

export interface ResponseHeader {
  readonly id: string;
  readonly createdAt: number;
  readonly model: string;
  readonly request: ResponseRequest;
  readonly store: boolean;
  readonly conversationId: string | null;
  /** Created with `background: true`: the turn runs in the gateway, the client polls (responses-background.ts). */
  readonly background: boolean;
  /** Function name -> namespace for functions offered from a namespace tool. */
  readonly namespaces: ReadonlyMap<string, string>;
}

/** `queued` and `cancelled` occur only for background responses. */
export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export interface ResponseState {
  readonly status: ResponseStatus;
  readonly output: readonly Item[];
  readonly usage: ResponseUsage | null;
  readonly error: { code: string; message: string } | null;
  /** SPEC `reasoning_effort`: the effort the model was sent when the mapping changed the requested one. */
  readonly adjustedEffort?: string | null;
}

/** The Response object (`object: "response"`) as the SDK parses it. */
export function responseObject(h: ResponseHeader, s: ResponseState): Record<string, unknown> {
  const r = h.request;
  return {
    id: h.id,
    object: 'response',
    created_at: h.createdAt,
    status: s.status,
    background: h.background,
    error: s.error,
    incomplete_details: s.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    model: h.model,
    output: s.output,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    conversation: h.conversationId ? { id: h.conversationId } : null,
    reasoning: { effort: r.reasoning?.effort ?? null, summary: null },
    store: h.store,
    temperature: r.temperature ?? 1,
    text: { format: r.text?.format ?? { type: 'text' } },
    tool_choice: r.tool_choice ?? 'auto',
    tools: r.tools ?? [],
    top_p: r.top_p ?? 1,
    truncation: r.truncation ?? 'disabled',
    usage: s.usage,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
    // The lane the turn was billed in (SPEC `service_tier`), as chat completions report it.
    service_tier: resolveServiceTier(r.service_tier).lane,
    top_logprobs: r.top_logprobs ?? 0,
    max_tool_calls: r.max_tool_calls ?? null,
    prompt_cache_key: r.prompt_cache_key ?? null,
    prompt_cache_retention: r.prompt_cache_retention ?? null,
    safety_identifier: r.safety_identifier ?? null,
    // As chat completions report it (SPEC reasoning_effort: "a mapped value is reported in x_adjusted_reasoning_effort").
    ...(s.adjustedEffort ? { x_adjusted_reasoning_effort: s.adjustedEffort } : {}),
  };
}

/** Status from the chat finish reason. */
export function statusOf(finishReason: string | null): 'completed' | 'incomplete' {
  return finishReason === 'length' ? 'incomplete' : 'completed';
}
