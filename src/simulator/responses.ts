import { planChatTurn, type PlannedChoice, type PlannedTurn } from './chat-completion.js';
import { parseChatRequest } from './chat-request.js';
import type { StreamFrame, StreamTick } from './chat-stream.js';
import { invalidRequest } from './errors.js';
import { isRecord, type JsonRecord } from './json.js';
import type { Knobs } from './knobs.js';

// POST /v1/responses: a model server that speaks the Responses API itself (the gateway's
// `upstream.api: responses` passes bodies through to it). The request is read as the one chat turn it
// stands for and planned by the same deterministic planner as /v1/chat/completions, so the text, token
// counts and knobs (`sim` in the body, x-sim-* headers) behave alike; the answer is a Response object, or
// the Responses streaming events (response.created ... response.completed, each with sequence_number).

export type ResponsesAnswer = { readonly kind: 'json'; readonly body: string } | { readonly kind: 'stream'; readonly ticks: StreamTick[] };

interface ResponsesView {
  readonly body: JsonRecord;
  readonly model: string;
  readonly stream: boolean;
  readonly turn: PlannedTurn;
}

/** Input items as chat messages: text of messages, function calls and their outputs (enough to plan on). */
function chatMessages(body: JsonRecord): JsonRecord[] {
  const messages: JsonRecord[] = [];
  if (typeof body['instructions'] === 'string') messages.push({ role: 'system', content: body['instructions'] });
  const input = body['input'];
  if (typeof input === 'string') return [...messages, { role: 'user', content: input }];
  if (input !== undefined && !Array.isArray(input)) throw invalidRequest("'input' must be a string or an array of items", 'input');
  for (const item of (input ?? []) as unknown[]) {
    if (!isRecord(item)) throw invalidRequest("'input' items must be objects", 'input');
    if (item['type'] === 'function_call_output') messages.push({ role: 'tool', tool_call_id: String(item['call_id'] ?? ''), content: String(item['output'] ?? '') });
    else if (item['type'] === 'function_call') messages.push({ role: 'assistant', content: `${String(item['name'] ?? '')}${String(item['arguments'] ?? '')}` });
    else messages.push({ role: typeof item['role'] === 'string' ? item['role'] : 'user', content: item['content'] ?? '' });
  }
  if (messages.length === 0) throw invalidRequest("'input' is required", 'input');
  return messages;
}

function chatTools(body: JsonRecord): JsonRecord[] | undefined {
  const tools = body['tools'];
  if (!Array.isArray(tools)) return undefined;
  return tools.filter((t): t is JsonRecord => isRecord(t) && t['type'] === 'function').map((t) => ({ type: 'function', function: { name: t['name'], parameters: t['parameters'] } }));
}

function view(body: unknown, knobs: Knobs, reasons: (model: string) => boolean): ResponsesView {
  if (!isRecord(body)) throw invalidRequest('Request body must be a JSON object');
  const model = body['model'];
  if (typeof model !== 'string' || model === '') throw invalidRequest("'model' is required", 'model');
  const chat: JsonRecord = { model, messages: chatMessages(body) };
  if (body['max_output_tokens'] !== undefined && body['max_output_tokens'] !== null) chat['max_tokens'] = body['max_output_tokens'];
  const format = isRecord(body['text']) ? body['text']['format'] : undefined;
  if (isRecord(format) && format['type'] === 'json_schema') chat['response_format'] = { type: 'json_schema', json_schema: { schema: format['schema'] } };
  const tools = chatTools(body);
  if (tools && tools.length > 0) chat['tools'] = tools;
  const req = parseChatRequest(chat);
  return { body, model, stream: body['stream'] === true, turn: planChatTurn(req, knobs, { reasons: reasons(model) }) };
}

function outputItems(choice: PlannedChoice, id: string): JsonRecord[] {
  const items: JsonRecord[] = [];
  if (choice.contentText !== null && choice.contentText !== '') {
    items.push({ type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: choice.contentText, annotations: [] }] });
  }
  choice.toolCalls.forEach((call, i) => items.push({ type: 'function_call', id: `fc_${id}_${i}`, call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' }));
  return items;
}

function responseObject(v: ResponsesView, id: string, created: number, status: string, output: JsonRecord[]): JsonRecord {
  const u = v.turn.usage;
  const done = status !== 'in_progress';
  return {
    id: `resp_${id}`,
    object: 'response',
    created_at: created,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: v.body['instructions'] ?? null,
    max_output_tokens: v.body['max_output_tokens'] ?? null,
    model: v.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: v.body['previous_response_id'] ?? null,
    store: v.body['store'] ?? true,
    temperature: v.body['temperature'] ?? 1,
    text: { format: { type: 'text' } },
    tool_choice: v.body['tool_choice'] ?? 'auto',
    tools: v.body['tools'] ?? [],
    top_p: v.body['top_p'] ?? 1,
    truncation: 'disabled',
    usage: done
      ? {
          input_tokens: u.prompt_tokens,
          input_tokens_details: { cached_tokens: u.prompt_tokens_details.cached_tokens, cache_write_tokens: 0 },
          output_tokens: u.completion_tokens,
          output_tokens_details: { reasoning_tokens: u.completion_tokens_details.reasoning_tokens },
          total_tokens: u.total_tokens,
        }
      : null,
    metadata: v.body['metadata'] ?? {},
  };
}

/** The events of the turn, one tick for the opening, one per content token, one for the closing. */
function streamTicks(v: ResponsesView, choice: PlannedChoice, id: string, created: number, status: string): StreamTick[] {
  let sequence = 0;
  const frame = (type: string, fields: JsonRecord, counts = false): StreamFrame => ({
    text: `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`,
    countsForFailAfter: counts,
  });
  const output = outputItems(choice, id);
  const opening = responseObject(v, id, created, 'in_progress', []);
  const ticks: StreamTick[] = [[frame('response.created', { response: opening }), frame('response.in_progress', { response: opening })]];
  const message = output.find((item) => item['type'] === 'message');
  const msgId = `msg_${id}`;
  if (message) {
    (ticks[0] as StreamTick).push(
      frame('response.output_item.added', { output_index: 0, item: { type: 'message', id: msgId, status: 'in_progress', role: 'assistant', content: [] } }),
      frame('response.content_part.added', { item_id: msgId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
    );
    for (const token of choice.content) ticks.push([frame('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: token }, true)]);
  }
  const closing: StreamTick = [];
  if (message) {
    const text = choice.contentText ?? '';
    closing.push(
      frame('response.output_text.done', { item_id: msgId, output_index: 0, content_index: 0, text }),
      frame('response.content_part.done', { item_id: msgId, output_index: 0, content_index: 0, part: { type: 'output_text', text, annotations: [] } }),
      frame('response.output_item.done', { output_index: 0, item: message }),
    );
  }
  output.forEach((item, index) => {
    if (item['type'] !== 'function_call') return;
    closing.push(
      frame('response.output_item.added', { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } }, true),
      frame('response.function_call_arguments.done', { item_id: item['id'], output_index: index, arguments: item['arguments'] }),
      frame('response.output_item.done', { output_index: index, item }),
    );
  });
  const terminal = status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  closing.push(frame(terminal, { response: responseObject(v, id, created, status, output) }));
  ticks.push(closing);
  return ticks;
}

export function handleResponses(body: unknown, knobs: Knobs, reasons: (model: string) => boolean, seq: number, created: number): { model: string; answer: ResponsesAnswer } {
  const v = view(body, knobs, reasons);
  const choice = v.turn.choices[0] as PlannedChoice;
  const id = `sim${seq}`;
  const status = choice.finishReason === 'length' ? 'incomplete' : 'completed';
  if (v.stream) return { model: v.model, answer: { kind: 'stream', ticks: streamTicks(v, choice, id, created, status) } };
  return { model: v.model, answer: { kind: 'json', body: JSON.stringify(responseObject(v, id, created, status, outputItems(choice, id))) } };
}
