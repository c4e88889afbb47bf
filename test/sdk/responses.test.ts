/**
 * The Responses and Conversations APIs (issue 14) through the official `openai` client and raw fetch,
 * against a real gateway and simulator: one chat turn per response (the simulator's log shows what the
 * model was sent), stored chains, conversations as context, and their webhook events.
 */
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { PROJECT, WS_C } from '../helpers/configs.js';
import { advanceClock, call, type JsonResponse } from '../helpers/http.js';
import { lastSimRequest, simRequests, simSeq } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const suite = useGatewaySuite({
  security: { allow_private_targets: true, allow_http_targets: true },
  webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 },
  limits: { conversation_items_requests_per_minute: 1000 },
});

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

// Conversations are control-plane routes (60 a minute per project): each test starts a fresh window.
beforeEach(async () => {
  await advanceClock(suite.gw.url, 61_000);
});

const project = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/v1`, apiKey: suite.keys.full, maxRetries: 0 });
const direct = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/chat/v1`, apiKey: suite.keys.full, maxRetries: 0 });

/** The chat messages the simulator received in its newest request. */
async function upstreamBody(): Promise<Record<string, unknown>> {
  return JSON.parse((await lastSimRequest(suite.sim.url)).body) as Record<string, unknown>;
}

function expectEnvelope(res: JsonResponse, status: number, code: string, param: string | null): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code, param } } });
  expect(Object.keys(res.body as object)).toEqual(['error']);
}

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('creating responses', () => {
  it('answers a string input with a completed Response whose output_text and usage come from one chat turn', async () => {
    const before = await simSeq(suite.sim.url);
    const response = await project().responses.create({ model: 'model-chat', input: 'Tell me about switchboards', instructions: 'Be brief.', max_output_tokens: 50, temperature: 0.5, metadata: { team: 'a' } });
    expect(response.id).toMatch(/^resp_[0-9a-f]{24}$/);
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.model).toBe('model-chat');
    expect(response.metadata).toEqual({ team: 'a' });
    // The simulator's default answer: 16 one-token words.
    expect(response.output_text.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    const [message] = response.output;
    expect(message).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: response.output_text }] });
    expect(response.usage?.total_tokens).toBe((response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0));
    expect(response.usage?.output_tokens).toBe(DEFAULT_CONTENT_TOKENS);
    // ONE upstream turn, with exactly the translated fields.
    expect(await simSeq(suite.sim.url)).toBe(before + 1);
    const body = await upstreamBody();
    expect(body).toEqual({ model: 'sim-chat', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about switchboards' }], max_tokens: 50, temperature: 0.5 });
  });

  it('serves the endpoint-slug route and maps reasoning, text.format and tool_choice', async () => {
    await direct().responses.create({
      model: 'anything',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Give me JSON' }] }],
      text: { format: { type: 'json_schema', name: 'thing', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: true } },
      tools: [weather],
      tool_choice: 'none',
      top_p: 0.9,
    });
    const body = await upstreamBody();
    expect(body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'thing', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: true } });
    expect(body.tool_choice).toBe('none');
    expect(body.top_p).toBe(0.9);
    expect(body.messages).toEqual([{ role: 'user', content: 'Give me JSON' }]);
    await new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/reasoner/v1`, apiKey: suite.keys.full, maxRetries: 0 }).responses.create({ model: 'x', input: 'think', reasoning: { effort: 'low' } });
    expect((await upstreamBody()).reasoning_effort).toBe('low');
  });

  it('reports an effort the mapping changed in x_adjusted_reasoning_effort, buffered and streamed, as chat does', async () => {
    const reasoner = new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/reasoner/v1`, apiKey: suite.keys.full, maxRetries: 0 });
    // The reasoner's levels are low, medium and high: minimal takes the lowest.
    const mapped = (await reasoner.responses.create({ model: 'x', input: 'think', reasoning: { effort: 'minimal' } })) as unknown as Record<string, unknown>;
    expect((await upstreamBody()).reasoning_effort).toBe('low');
    expect(mapped.x_adjusted_reasoning_effort).toBe('low');
    const stream = await reasoner.responses.create({ model: 'x', input: 'think', reasoning: { effort: 'minimal' }, stream: true });
    let completed: Record<string, unknown> | null = null;
    for await (const event of stream) if (event.type === 'response.completed') completed = event.response as unknown as Record<string, unknown>;
    expect(completed?.x_adjusted_reasoning_effort).toBe('low');
    const asSent = (await reasoner.responses.create({ model: 'x', input: 'think', reasoning: { effort: 'high' } })) as unknown as Record<string, unknown>;
    expect(asSent).not.toHaveProperty('x_adjusted_reasoning_effort');
  });

  it('streams the semantic events in order, each with its sequence_number, ending in response.completed', async () => {
    const stream = await project().responses.create({ model: 'model-chat', input: 'Stream me a story', stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    const deltas = types.filter((t) => t === 'response.output_text.delta').length;
    expect(deltas).toBe(DEFAULT_CONTENT_TOKENS);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array<string>(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events[events.length - 1];
    if (completed?.type !== 'response.completed') throw new Error('no response.completed');
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(completed.response.output_text ?? completed.response.output[0]).toBeTruthy();
    expect(completed.response.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text }] });
    expect(completed.response.usage?.output_tokens).toBe(DEFAULT_CONTENT_TOKENS);
    // Stored: retrievable once the stream is read.
    const stored = await project().responses.retrieve(completed.response.id);
    expect(stored.output_text).toBe(text);
    const upstream = await upstreamBody();
    expect(upstream.stream).toBe(true);
  });

  it('sends raw SSE frames named after their event type', async () => {
    const res = await fetch(`${suite.gw.url}/${PROJECT}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-chat', input: 'hello', stream: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = parseSse(await res.text());
    for (const f of frames) expect((JSON.parse(f.data) as { type: string }).type).toBe(f.event);
    expect(frames[frames.length - 1]?.event).toBe('response.completed');
  });
});

describe('function tools', () => {
  it('returns a function_call item, and a function_call_output round trip reaches the model as a tool message', async () => {
    const client = project();
    const first = await client.responses.create({ model: 'model-chat', input: 'Weather in Paris?', tools: [weather] });
    const call = first.output.find((o) => o.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error(`no function call: ${JSON.stringify(first.output)}`);
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual(expect.any(Object));
    expect(call.call_id).toMatch(/^call_/);
    expect((await upstreamBody()).tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weather.parameters, strict: false } }]);

    const second = await client.responses.create({
      model: 'model-chat',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' }],
      tools: [weather],
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toMatch(/^Tool result received:/);
    const messages = (await upstreamBody()).messages as Record<string, unknown>[];
    expect(messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } }] },
      { role: 'tool', tool_call_id: call.call_id, content: '{"temp": 21}' },
    ]);
  });

  it('streams a function call as output_item.added, arguments deltas, arguments.done, output_item.done', async () => {
    const stream = await project().responses.create({ model: 'model-chat', input: 'Weather?', tools: [weather], stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type).filter((t) => t !== 'response.function_call_arguments.delta');
    expect(types).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    const done = events.find((e) => e.type === 'response.function_call_arguments.done');
    const deltas = events.flatMap((e) => (e.type === 'response.function_call_arguments.delta' ? [e.delta] : [])).join('');
    expect(done?.type === 'response.function_call_arguments.done' ? done.arguments : null).toBe(deltas);
  });
});

describe('stored responses', () => {
  it('replays the stored chain before the new input (previous_response_id), as the simulator receives it', async () => {
    const client = project();
    const one = await client.responses.create({ model: 'model-chat', input: 'first question', instructions: 'only for turn one' });
    const two = await client.responses.create({ model: 'model-chat', input: 'second question', previous_response_id: one.id });
    await client.responses.create({ model: 'model-chat', input: 'third question', previous_response_id: two.id });
    // Instructions are not carried over (OpenAI: they apply to their own response only).
    expect((await upstreamBody()).messages).toEqual([
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: one.output_text },
      { role: 'user', content: 'second question' },
      { role: 'assistant', content: two.output_text },
      { role: 'user', content: 'third question' },
    ]);
    expect(two.previous_response_id).toBe(one.id);
  });

  it('retrieves, lists input items, refuses cancel, and deletes', async () => {
    const client = project();
    const created = await client.responses.create({ model: 'model-chat', input: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'user', content: 'c' }] });
    const got = await client.responses.retrieve(created.id);
    expect(got).toMatchObject({ id: created.id, object: 'response', status: 'completed', output: created.output });
    const items = await client.responses.inputItems.list(created.id, { order: 'asc' });
    expect(items.data.map((i) => (i.type === 'message' ? i.content[0] : null))).toEqual([{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }, { type: 'input_text', text: 'c' }]);
    const page = await client.responses.inputItems.list(created.id, { limit: 2 });
    expect(page.data.map((i) => (i.type === 'message' ? i.content[0] : null))).toEqual([{ type: 'input_text', text: 'c' }, { type: 'input_text', text: 'b' }]);
    expect(page.has_more).toBe(true);
    const cancel = await call(`${suite.gw.url}/${PROJECT}/v1/responses/${created.id}/cancel`, { method: 'POST', key: suite.keys.full });
    expectEnvelope(cancel, 400, 'invalid_request', null);
    const del = await call(`${suite.gw.url}/${PROJECT}/v1/responses/${created.id}`, { method: 'DELETE', key: suite.keys.full });
    expect(del.body).toEqual({ id: created.id, object: 'response.deleted', deleted: true });
    const gone = await client.responses.retrieve(created.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    expect((gone as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('response_not_found');
  });

  it('keeps nothing with store: false: not retrievable, not usable as previous_response_id', async () => {
    const created = await project().responses.create({ model: 'model-chat', input: 'private', store: false });
    // `store` is in OpenAI's JSON though not in the SDK's Response type.
    expect((created as unknown as { store: boolean }).store).toBe(false);
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/responses/${created.id}`, { key: suite.keys.full });
    expectEnvelope(res, 404, 'response_not_found', null);
    const chained = await call(`${suite.gw.url}/${PROJECT}/v1/responses`, { key: suite.keys.full, body: { model: 'model-chat', input: 'next', previous_response_id: created.id } });
    expectEnvelope(chained, 404, 'response_not_found', 'previous_response_id');
  });

  it('refuses store: true in a zero-data-retention workspace, and stores nothing there by default', async () => {
    const url = `${suite.gw.url}/${PROJECT}/v1/responses`;
    const headers = { 'x-workspace-id': WS_C };
    const refused = await call(url, { key: suite.keys.full, headers, body: { model: 'model-chat', input: 'hi', store: true } });
    expectEnvelope(refused, 400, 'retention_not_permitted', 'store');
    const ok = await call(url, { key: suite.keys.full, headers, body: { model: 'model-chat', input: 'hi' } });
    expect(ok.status).toBe(200);
    expect((ok.body as { store: boolean }).store).toBe(false);
  });

  it('refuses what it cannot translate, in the error envelope', async () => {
    const url = `${suite.gw.url}/${PROJECT}/v1/responses`;
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: 'x', tools: [{ type: 'web_search' }] } }), 400, 'unsupported_value', 'tools[0].type');
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: 'x', background: true, store: false } }), 400, 'invalid_request', 'background');
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: [{ role: 'robot', content: 'x' }] } }), 400, 'invalid_request', 'input[0].role');
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: 'x', frobnicate: 1 } }), 400, 'invalid_request', 'frobnicate');
    const orphan = { type: 'function_call_output', call_id: 'call_nope', output: 'x' };
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: [{ role: 'user', content: 'hi' }, orphan] } }), 400, 'invalid_request', 'input[1].call_id');
    const answered = [{ type: 'function_call', call_id: 'call_yes', name: 'f', arguments: '{}' }, { ...orphan, call_id: 'call_yes' }];
    expect((await call(url, { key: suite.keys.full, body: { model: 'model-chat', input: answered } })).status).toBe(200);
    expectEnvelope(await call(url, { key: suite.keys.full, body: { model: 'no-such-model', input: 'x' } }), 404, 'model_not_found', 'model');
  });

  it('holds metadata to SPEC\'s limits (16 pairs, keys 64, values 512) on responses and conversations, created or updated', async () => {
    const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    const tooMany = pairs(17);
    const longKey = { ['k'.repeat(65)]: 'v' };
    const longValue = { k: 'v'.repeat(513) };
    const responses = `${suite.gw.url}/${PROJECT}/v1/responses`;
    const conversations = `${suite.gw.url}/${PROJECT}/v1/conversations`;
    for (const metadata of [tooMany, longKey, longValue, { k: 1 }]) {
      const refused = await call(responses, { key: suite.keys.full, body: { model: 'model-chat', input: 'x', metadata } });
      expectEnvelope(refused, 400, 'invalid_request', 'metadata');
      expect((refused.body as { error: { message: string } }).error.message).toContain('at most 16 pairs with keys of at most 64 characters and string values of at most 512 characters');
      expectEnvelope(await call(conversations, { key: suite.keys.full, body: { metadata } }), 400, 'invalid_request', 'metadata');
    }
    const created = await call(conversations, { key: suite.keys.full, body: { metadata: pairs(16) } });
    expect(created.status).toBe(200);
    const id = (created.body as { id: string }).id;
    expectEnvelope(await call(`${conversations}/${id}`, { key: suite.keys.full, body: { metadata: longValue } }), 400, 'invalid_request', 'metadata');
    const kept = await call(`${conversations}/${id}`, { key: suite.keys.full });
    expect((kept.body as { metadata: Record<string, string> }).metadata).toEqual(pairs(16));
    const ok = await call(responses, { key: suite.keys.full, body: { model: 'model-chat', input: 'x', metadata: { ['k'.repeat(64)]: 'v'.repeat(512) } } });
    expect(ok.status).toBe(200);
  });
});

describe('stored responses and conversations on the endpoint base URL', () => {
  // Was: POST /{project}/{endpoint}/v1/responses stored the response, but retrieve, input_items, cancel
  // and DELETE on that same base URL were 404 "No route matches", as were its conversations.
  it('retrieves, lists input items, refuses cancel and deletes a response on the base URL that created it', async () => {
    const client = direct();
    const created = await client.responses.create({ model: 'anything', input: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] });
    expect(await client.responses.retrieve(created.id)).toMatchObject({ id: created.id, status: 'completed', output: created.output });
    const items = await client.responses.inputItems.list(created.id, { order: 'asc' });
    expect(items.data.map((i) => (i.type === 'message' ? i.content[0] : null))).toEqual([{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }]);
    const cancel = await client.responses.cancel(created.id).catch((e: unknown) => e);
    expect(cancel).toBeInstanceOf(OpenAI.BadRequestError);
    await client.responses.delete(created.id);
    const gone = await client.responses.retrieve(created.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    expect((gone as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('response_not_found');
  });

  it('keeps the project and workspace rules: another project, an unreachable workspace, an unknown or forbidden endpoint', async () => {
    const created = await direct().responses.create({ model: 'anything', input: 'scoped' });
    const at = (slug: string, key: string): Promise<JsonResponse> => call(`${suite.gw.url}/${PROJECT}/${slug}/v1/responses/${created.id}`, { key });
    expectEnvelope(await at('chat', suite.keys.otherProject), 403, 'project_mismatch', null);
    expectEnvelope(await at('chat', suite.keys.confinedOne), 404, 'response_not_found', null);
    expectEnvelope(await at('no-such-endpoint', suite.keys.full), 404, 'endpoint_not_found', null);
    expectEnvelope(await at('embed', suite.keys.endpointBound), 403, 'endpoint_restricted', null);
    expect((await at('chat', suite.keys.endpointBound)).status).toBe(200);
  });

  it('serves the conversations API there, and a response on that base URL uses the conversation', async () => {
    const client = direct();
    const conv = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'remember the word lantern' }] });
    expect(await client.conversations.retrieve(conv.id)).toEqual(conv);
    await client.responses.create({ model: 'anything', input: 'which word?', conversation: conv.id });
    const items = await client.conversations.items.list(conv.id, { order: 'asc' });
    expect(items.data.map((i) => (i.type === 'message' ? i.role : i.type))).toEqual(['user', 'user', 'assistant']);
    expect((await client.conversations.delete(conv.id)).deleted).toBe(true);
  });
});

describe('refusals in Responses terms', () => {
  // The request is checked as a chat turn; its refusals must name the fields the client sent, never chat's.
  const url = (): string => `${suite.gw.url}/${PROJECT}/v1/responses`;
  const refusal = async (body: Record<string, unknown>): Promise<{ status: number; code: string; param: string | null; message: string }> => {
    const res = await call(url(), { key: suite.keys.full, body });
    const error = (res.body as { error: { code: string; param: string | null; message: string } }).error;
    return { status: res.status, code: error.code, param: error.param, message: error.message };
  };

  it('names input, not messages, when there is nothing to send', async () => {
    for (const [input, got] of [[undefined, 'nothing'], [[], 'an array of 0 items']] as const) {
      const r = await refusal({ model: 'model-chat', ...(input === undefined ? {} : { input }) });
      expect(r).toEqual({ status: 400, code: 'invalid_request', param: 'input', message: `input must be a non-empty string or array of input items (or continue a previous_response_id or conversation); got ${got}.` });
    }
  });

  it('names max_output_tokens, text.format and tools[i] where the chat turn would name its own fields', async () => {
    const long = 'word '.repeat(400);
    const over = await refusal({ model: 'model-small', input: long, max_output_tokens: 200 });
    expect(over).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'max_output_tokens' });
    expect(over.message).toContain('max_output_tokens asks for 200');
    const format = await refusal({ model: 'model-chat', input: 'x', text: { format: { type: 'json_schema', schema: { type: 'object' } } } });
    expect(format.status).toBe(400);
    expect(format).toMatchObject({ param: 'text.format.name', message: expect.stringMatching(/^text\.format\.name must be /) });
    expect(format.message).not.toMatch(/response_format|json_schema\./);
    const schemaless = await refusal({ model: 'model-chat', input: 'x', text: { format: { type: 'json_schema', name: 'n' } } });
    expect(schemaless).toEqual({ status: 400, code: 'invalid_request', param: 'text.format.schema', message: 'text.format.schema must be a JSON Schema object when text.format.type is json_schema.' });
    const tool = await refusal({ model: 'model-chat', input: 'x', tools: [{ type: 'function', name: 'bad name!' }] });
    expect(tool.status).toBe(400);
    expect(tool).toMatchObject({ param: 'tools[0].name', message: expect.stringMatching(/^tools\[0\]\.name must be /) });
    expect(tool.message).not.toContain('function');
    for (const r of [over, format, tool]) expect(r.message).not.toMatch(/messages|max_tokens/);
  });

  it('names input for a part the model cannot take, and says which part in the message', async () => {
    const image = { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' };
    const r = await refusal({ model: 'model-chat', input: [{ role: 'user', content: [{ type: 'input_text', text: 'see' }, image] }] });
    expect(r).toMatchObject({ status: 400, param: 'input' });
    expect(r.message).toMatch(/^input \(messages\[0\]\.content\[1\] of the chat turn it became\) /);
  });
});

describe('conversations', () => {
  it('creates, retrieves, updates, lists, adds, gets and deletes items, and deletes', async () => {
    const client = project();
    const conv = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'hello there' }], metadata: { topic: 'demo' } });
    expect(conv).toMatchObject({ object: 'conversation', metadata: { topic: 'demo' } });
    expect(conv.id).toMatch(/^conv_/);
    expect(await client.conversations.retrieve(conv.id)).toEqual(conv);
    expect((await client.conversations.update(conv.id, { metadata: { topic: 'changed' } })).metadata).toEqual({ topic: 'changed' });
    const added = await client.conversations.items.create(conv.id, { items: [{ type: 'message', role: 'assistant', content: 'hi!' }, { type: 'message', role: 'user', content: 'how are you' }] });
    expect(added.data).toHaveLength(2);
    const asc = await client.conversations.items.list(conv.id, { order: 'asc' });
    expect(asc.data.map((i) => (i.type === 'message' ? i.role : i.type))).toEqual(['user', 'assistant', 'user']);
    const after = await client.conversations.items.list(conv.id, { order: 'asc', after: asc.data[0]?.id ?? '', limit: 1 });
    expect(after.data.map((i) => i.id)).toEqual([asc.data[1]?.id]);
    expect(after.has_more).toBe(true);
    const second = asc.data[1];
    if (!second?.id) throw new Error('missing item');
    const secondId = second.id;
    expect(await client.conversations.items.retrieve(secondId, { conversation_id: conv.id })).toEqual(second);
    await client.conversations.items.delete(secondId, { conversation_id: conv.id });
    const missing = await call(`${suite.gw.url}/${PROJECT}/v1/conversations/${conv.id}/items/${secondId}`, { key: suite.keys.full });
    expectEnvelope(missing, 404, 'conversation_item_not_found', null);
    expect(await client.conversations.delete(conv.id)).toEqual({ id: conv.id, object: 'conversation.deleted', deleted: true });
    const gone = await call(`${suite.gw.url}/${PROJECT}/v1/conversations/${conv.id}`, { key: suite.keys.full });
    expectEnvelope(gone, 404, 'conversation_not_found', null);
  });

  it('uses the conversation as context and appends the new input and the output to it', async () => {
    const client = project();
    const conv = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'my name is Ada' }] });
    const response = await client.responses.create({ model: 'model-chat', conversation: conv.id, input: 'what is my name?' });
    expect(response.conversation?.id).toBe(conv.id);
    expect((await upstreamBody()).messages).toEqual([
      { role: 'user', content: 'my name is Ada' },
      { role: 'user', content: 'what is my name?' },
    ]);
    const items = await client.conversations.items.list(conv.id, { order: 'asc' });
    expect(items.data).toHaveLength(3);
    expect(items.data[2]).toEqual(response.output[0]);
  });

  it('refuses a conversation of more than 2000 items unless truncation is auto, which replays the newest 2000', async () => {
    const client = project();
    const conv = await client.conversations.create({});
    const url = `${suite.gw.url}/${PROJECT}/v1/conversations/${conv.id}/items`;
    // 2001 items, 20 a request (the per-request maximum), 8 requests at a time.
    const batches = Array.from({ length: 101 }, (_, b) => Array.from({ length: b === 100 ? 1 : 20 }, (_, i) => ({ type: 'message', role: 'user', content: `item ${b * 20 + i}` })));
    // Concurrent appends commit in any order: the first and the last batch (whose items the assertions below
    // name) go alone, first and last.
    const firstItems = batches.shift() ?? [];
    const last = batches.pop() ?? [];
    expect((await call(url, { key: suite.keys.full, body: { items: firstItems } })).status).toBe(200);
    for (let i = 0; i < batches.length; i += 8) {
      const results = await Promise.all(batches.slice(i, i + 8).map((items) => call(url, { key: suite.keys.full, body: { items } })));
      for (const r of results) expect(r.status).toBe(200);
    }
    expect((await call(url, { key: suite.keys.full, body: { items: last } })).status).toBe(200);
    const before = await simSeq(suite.sim.url);
    const refused = await call(`${suite.gw.url}/${PROJECT}/v1/responses`, { key: suite.keys.full, body: { model: 'model-chat', conversation: conv.id, input: 'next' } });
    expectEnvelope(refused, 400, 'context_length_exceeded', 'input');
    expect(await simSeq(suite.sim.url)).toBe(before);
    // The reasoner's 32768-token window holds 2000 short items.
    const truncated = await call(`${suite.gw.url}/${PROJECT}/v1/responses`, { key: suite.keys.full, body: { model: 'acme/model-reasoner', conversation: conv.id, input: 'next', truncation: 'auto' } });
    expect(truncated.status).toBe(200);
    const messages = (await upstreamBody()).messages as { content: string }[];
    expect(messages).toHaveLength(2001);
    expect(messages[0]?.content).toBe('item 1');
    expect(messages[1999]?.content).toBe('item 2000');
    expect(messages[2000]?.content).toBe('next');
  });

  it('refuses a conversation in a zero-data-retention workspace and one too many items per request', async () => {
    const refused = await call(`${suite.gw.url}/${PROJECT}/v1/conversations`, { key: suite.keys.full, headers: { 'x-workspace-id': WS_C }, body: {} });
    expectEnvelope(refused, 400, 'retention_not_permitted', null);
    // Nor may a request running there add items to a conversation made elsewhere: they would be kept.
    const elsewhere = await call(`${suite.gw.url}/${PROJECT}/v1/conversations`, { key: suite.keys.full, body: {} });
    const items = await call(`${suite.gw.url}/${PROJECT}/v1/conversations/${(elsewhere.body as { id: string }).id}/items`, { key: suite.keys.full, headers: { 'x-workspace-id': WS_C }, body: { items: [{ role: 'user', content: 'x' }] } });
    expectEnvelope(items, 400, 'retention_not_permitted', null);
    const many = Array.from({ length: 21 }, () => ({ role: 'user', content: 'x' }));
    expectEnvelope(await call(`${suite.gw.url}/${PROJECT}/v1/conversations`, { key: suite.keys.full, body: { items: many } }), 400, 'invalid_request', 'items');
  });
});

describe('events', () => {
  it('emits response.completed, response.failed, conversation.created and conversation.deleted through the outbox', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const hook = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, {
      key: suite.keys.full,
      body: { url: receiver.url, events: ['response.completed', 'response.failed', 'conversation.created', 'conversation.deleted'] },
    });
    expect(hook.status).toBe(201);
    const client = project();
    const conv = await client.conversations.create({});
    const response = await client.responses.create({ model: 'model-chat', input: 'hi', store: false });
    // A turn the context window refuses: the response failed.
    const failed = await call(`${suite.gw.url}/${PROJECT}/v1/responses`, { key: suite.keys.full, body: { model: 'model-chat', input: 'hi', max_output_tokens: 100_000 } });
    expect(failed.status).toBe(400);
    await client.conversations.delete(conv.id);
    const got = await receiver.waitFor(4);
    const events = got.map((d) => ({ type: d.body.type, id: (d.body.data as { id: string }).id }));
    expect(events).toEqual(
      expect.arrayContaining([
        { type: 'conversation.created', id: conv.id },
        { type: 'response.completed', id: response.id },
        { type: 'response.failed', id: failed.headers.get('x-request-id') },
        { type: 'conversation.deleted', id: conv.id },
      ]),
    );
    expect((await simRequests(suite.sim.url, 1)).length).toBe(1);
  });
});
