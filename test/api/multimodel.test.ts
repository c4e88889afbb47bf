/**
 * The multimodel route (SPEC "Semantic router behaviour" 10) end to end: a real gateway, the bundled
 * simulator as planner and as every model (src/simulator/planner.ts scripts the plan with `[plan: ...]`
 * in the request text). The simulator answers 16 content tokens per dispatch, which is how the cost
 * rule (n x S dispatches, plus a synthesis per choice when S >= 3) is read off `usage`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PLANNER_MARKER } from '../../src/core/multimodel/planner-prompt.js';
import { SYNTHESIS_INSTRUCTION } from '../../src/core/multimodel/step-messages.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { R_CHAT, R_EMBED, R_MATH, useRouterSuite, WS_SOLO } from '../helpers/router-config.js';
import { simRequests, simSeq, type SimRequest } from '../helpers/simulator-log.js';
import { chunksOf, parseSse } from '../helpers/sse.js';

// Plain-HTTP loopback image URLs are admitted, so the server-side image fetch can be seen on sub-tasks.
const suite = useRouterSuite({ security: { allow_private_targets: true, allow_http_targets: true } });
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('png body')]);
let images: Server;
let imageOrigin = '';
beforeAll(async () => {
  images = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG));
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageOrigin = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => images.close(() => resolve())));
const TOKENS_PER_ANSWER = 16;

const url = (): string => `${suite.base}/_semantic/router/v1/chat/completions/multimodel`;
const mgmt = (path: string): string => `${suite.base}/v1/management/semantic-router${path}`;
const ask = (content: unknown, extra: Record<string, unknown> = {}) => ({ model: 'client-model', messages: [{ role: 'user', content }], ...extra });
const multimodel = (body: object, headers: Record<string, string> = {}): Promise<JsonResponse> => call(url(), { key: suite.keys.full, body, headers });
const patchConfig = (body: object): Promise<JsonResponse> => call(mgmt('/config'), { method: 'PATCH', key: suite.keys.full, body });

interface Completion {
  readonly choices: { index: number; message: { content: string | null; tool_calls?: unknown }; finish_reason: string }[];
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  readonly x_multimodel?: { subtasks: number; dispatches: number };
}
const completion = (res: JsonResponse): Completion => res.body as Completion;

type ChatBody = { messages: { role: string; content: unknown }[]; response_format?: unknown; model: string };
const chatBody = (r: SimRequest): ChatBody => JSON.parse(r.body) as ChatBody;
const isPlanner = (r: SimRequest): boolean => r.path === '/v1/chat/completions' && String(chatBody(r).messages[0]?.content).startsWith(PLANNER_MARKER);

/** What reached the simulator during `run`: planner calls and dispatches, in order. */
async function seen<T>(run: () => Promise<T>): Promise<{ result: T; planner: SimRequest[]; dispatches: SimRequest[] }> {
  const before = await simSeq(suite.sim.url);
  const result = await run();
  const all = (await simRequests(suite.sim.url, 500)).filter((r) => r.seq > before && r.path === '/v1/chat/completions').sort((a, b) => a.seq - b.seq);
  return { result, planner: all.filter(isPlanner), dispatches: all.filter((r) => !isPlanner(r)) };
}

interface DecisionRow {
  readonly decision_request_id: string;
  readonly endpoint_slug: string;
  readonly multimodel?: { role: string; step_id: string | null; choice: number };
  readonly [field: string]: unknown;
}

async function decisionsFor(res: JsonResponse | Response): Promise<DecisionRow[]> {
  const list = await call(`${mgmt('/decisions')}?limit=500`, { key: suite.keys.full });
  return (list.body as { data: DecisionRow[] }).data.filter((d) => d.decision_request_id === res.headers.get('x-request-id'));
}

afterEach(async () => {
  await patchConfig({ semantic_router_multi_model_enabled: null, semantic_router_planner_endpoint_id: null });
});

describe('decomposition', () => {
  it('routes each sub-task by meaning and returns the terminal step of a two-step plan, with one decision row per dispatch', async () => {
    const { result: res, planner, dispatches } = await seen(() => multimodel(ask('compute the derivative of sin x. recommend a recipe for dinner tonight.')));
    expect(res.status).toBe(200);
    expect(planner).toHaveLength(1);
    expect(dispatches).toHaveLength(2);
    const body = completion(res);
    expect(body).toMatchObject({ id: res.headers.get('x-request-id'), object: 'chat.completion', model: 'client-model', x_multimodel: { subtasks: 2, dispatches: 2 } });
    expect(body.usage.completion_tokens).toBe(2 * TOKENS_PER_ANSWER);
    // The terminal step sees the first step's answer as an earlier exchange.
    const terminal = chatBody(dispatches[1] as SimRequest);
    expect(terminal.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(terminal.messages[2]?.content).toBe('recommend a recipe for dinner tonight.');
    const rows = await decisionsFor(res);
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => [r.multimodel?.step_id, r.endpoint_slug]).sort()).toEqual([
      ['s1', 'math'],
      ['s2', 'chat'],
    ]);
    for (const row of rows) expect(row).not.toHaveProperty('similarity_score');
    expect(res.headers.get('x-service-routed-endpoint')).toBe('math');
  });

  it('merges three or more sub-tasks with one synthesis dispatch, and no scaffolding reaches the answer', async () => {
    const { result: res, dispatches } = await seen(() => multimodel(ask('plan a weekend trip to lisbon. [plan: steps=3]')));
    expect(res.status).toBe(200);
    expect(dispatches).toHaveLength(4);
    const body = completion(res);
    expect(body.x_multimodel).toEqual({ subtasks: 3, dispatches: 4 });
    expect(body.usage.completion_tokens).toBe(4 * TOKENS_PER_ANSWER);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    const synthesis = chatBody(dispatches[3] as SimRequest);
    expect(String(synthesis.messages.at(-1)?.content)).toContain(SYNTHESIS_INSTRUCTION);
    const answer = body.choices[0]?.message.content ?? '';
    expect(answer.length).toBe(105);
    for (const scaffold of [SYNTHESIS_INSTRUCTION, 'plan a weekend trip', '(part 2)', 's1', '[plan']) expect(answer).not.toContain(scaffold);
    const rows = await decisionsFor(res);
    expect(rows.map((r) => r.multimodel?.role).sort()).toEqual(['step', 'step', 'step', 'synthesis']);
  });

  it('runs independent sub-tasks without each other and hands a dependent one its predecessors answers', async () => {
    const parallel = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=3]')));
    const steps = parallel.dispatches.slice(0, 3).map(chatBody);
    for (const s of steps) expect(s.messages.map((m) => m.role)).toEqual(['user']);

    const chained = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=3, chain]')));
    const [first, second, third] = chained.dispatches.map(chatBody);
    expect(first?.messages.map((m) => m.role)).toEqual(['user']);
    expect(second?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(third?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    // The dispatch of s2 carries the answer s1 got.
    expect(typeof second?.messages[1]?.content).toBe('string');
    expect(chained.dispatches).toHaveLength(4);
  });

  it('bills n x S dispatches plus one synthesis per choice, and does not cap n', async () => {
    const three = await multimodel(ask('recommend a recipe. [plan: steps=3]', { n: 3 }));
    expect(three.status).toBe(200);
    expect(completion(three).choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(completion(three).x_multimodel).toEqual({ subtasks: 3, dispatches: 12 });
    expect(completion(three).usage.completion_tokens).toBe(12 * TOKENS_PER_ANSWER);
    expect(await decisionsFor(three)).toHaveLength(12);

    const many = await multimodel(ask('recommend a recipe. [plan: steps=1]', { n: 130 }));
    expect(many.status).toBe(200);
    expect(completion(many).choices).toHaveLength(130);
    expect(completion(many).usage.completion_tokens).toBe(130 * TOKENS_PER_ANSWER);
  });

  it('answers 400 unsupported_value on n for a research turn with n above 1, and serves it with n = 1', async () => {
    const { result, dispatches } = await seen(() => multimodel(ask('research the history of lisbon. [plan: steps=2]', { n: 2 })));
    expectError(result, 400, 'unsupported_value', 'n');
    expect(dispatches).toHaveLength(0);
    expect((await multimodel(ask('research the history of lisbon. [plan: steps=2]'))).status).toBe(200);
    const zero = await multimodel(ask('hello', { n: 0 }));
    expectError(zero, 400, 'invalid_request', 'n');
    expect((zero.body as { error: { message: string } }).error.message).toBe('n must be a positive integer; got 0.');
  });

  it('honours x_research_run: the research scope grants it, n above 1 is 400 on n, and the field never reaches a model', async () => {
    const plain = 'tell me about lisbon. [plan: steps=2]';
    const unscoped = await seen(() => multimodel(ask(plain, { x_research_run: true })));
    expectError(unscoped.result, 403, 'scope_insufficient', 'x_research_run');
    expect(errorOf(unscoped.result).message).toBe('x_research_run needs the research scope; the API key has inference, management.');
    expect([...unscoped.planner, ...unscoped.dispatches]).toHaveLength(0);
    const research = (body: object): Promise<JsonResponse> => call(url(), { key: suite.keys.research, body });
    // The planner would not call this turn research: the client's field is enough.
    const many = await seen(() => research(ask(plain, { x_research_run: true, n: 2 })));
    expectError(many.result, 400, 'unsupported_value', 'n');
    expect([...many.planner, ...many.dispatches]).toHaveLength(0);
    expectError(await research(ask(plain, { x_research_run: 'yes' })), 400, 'invalid_request', 'x_research_run');
    const served = await seen(() => research(ask(plain, { x_research_run: true })));
    expect(served.result.status).toBe(200);
    expect(served.dispatches.length).toBe(2);
    for (const r of [...served.planner, ...served.dispatches]) expect(JSON.parse(r.body)).not.toHaveProperty('x_research_run');
  });

  it('sends the client response_format only with the dispatch whose answer the client receives', async () => {
    const format = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } };
    const { dispatches } = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=3]', { response_format: format, temperature: 0.5 })));
    expect(dispatches.map((d) => chatBody(d).response_format ?? null)).toEqual([null, null, null, format]);
    for (const d of dispatches) expect(JSON.parse(d.body)).toMatchObject({ temperature: 0.5, model: 'sim-chat' });
  });
});

describe('the planner', () => {
  it('retries an answer that is not a plan once, then decomposes', async () => {
    const { result, planner, dispatches } = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=2, invalid-once]')));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(2);
    expect(chatBody(planner[1] as SimRequest).messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(dispatches).toHaveLength(2);
  });

  it('degrades to single-endpoint dispatch after a second invalid plan: the client body reaches one model as sent', async () => {
    const body = ask('recommend a recipe for dinner tonight [plan: invalid]', { temperature: 0.2 });
    const { result, planner, dispatches } = await seen(() => multimodel(body));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(2);
    expect(dispatches).toHaveLength(1);
    expect(JSON.parse((dispatches[0] as SimRequest).body)).toEqual({ ...body, model: 'sim-chat' });
    expect(completion(result).x_multimodel).toBeUndefined();
    const rows = await decisionsFor(result);
    expect(rows).toHaveLength(1);
    expect(rows[0]).not.toHaveProperty('multimodel');
  });

  it('uses the configured planner endpoint, validated like the other endpoint settings', async () => {
    // The default is the first structured-output endpoint by slug (chat): the planner asks for the plan schema.
    const byDefault = await seen(() => multimodel(ask('recommend a recipe.')));
    expect(chatBody(byDefault.planner[0] as SimRequest).response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'switchboard_plan' } });
    expect((await patchConfig({ semantic_router_planner_endpoint_id: R_MATH })).body).toMatchObject({ semantic_router_planner_endpoint_id: R_MATH });
    const configured = await seen(() => multimodel(ask('recommend a recipe.')));
    expect(chatBody(configured.planner[0] as SimRequest).response_format).toBeUndefined();
    expectError(await patchConfig({ semantic_router_planner_endpoint_id: R_EMBED }), 400, 'invalid_semantic_router_config', 'semantic_router_planner_endpoint_id');
    expectError(await patchConfig({ semantic_router_planner_endpoint_id: 'chat' }), 400, 'invalid_semantic_router_config', 'semantic_router_planner_endpoint_id');
    expect((await patchConfig({ semantic_router_planner_endpoint_id: R_CHAT })).status).toBe(200);
  });
});

describe('turns that are not decomposed', () => {
  it('serves a turn like the single-model route when multi-model routing is disabled', async () => {
    expect((await patchConfig({ semantic_router_multi_model_enabled: false })).status).toBe(200);
    const body = ask('compute the derivative of sin x. recommend a recipe. [plan: steps=3]');
    const { result, planner, dispatches } = await seen(() => multimodel(body));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(0);
    expect(dispatches).toHaveLength(1);
    expect(JSON.parse((dispatches[0] as SimRequest).body)).toEqual({ ...body, model: 'sim-chat' });
  });

  it('keeps this route n rule on an undecomposed turn: n reaches the one model as sent, streamed too', async () => {
    expect((await patchConfig({ semantic_router_multi_model_enabled: false })).status).toBe(200);
    const res = await fetch(url(), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask('recommend a recipe for dinner tonight', { n: 2, stream: true })),
    });
    expect(res.status).toBe(200);
    const chunks = chunksOf(parseSse(await res.text())) as { choices: { index: number; finish_reason: string | null }[] }[];
    expect(chunks.flatMap((c) => c.choices.filter((ch) => ch.finish_reason !== null).map((ch) => ch.index)).sort()).toEqual([0, 1]);
  });

  it('serves the caller own function tools on a tool-capable endpoint, finish_reason tool_calls, undecomposed', async () => {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
    const { result, planner } = await seen(() => multimodel(ask('compute the derivative of sin x. then look it up.', { tools, tool_choice: 'auto' })));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(0);
    expect(completion(result).choices[0]?.finish_reason).toBe('tool_calls');
    expect(['math', 'chat']).toContain(result.headers.get('x-service-routed-endpoint'));

    const none = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=2]', { tools, tool_choice: 'none' })));
    expect(none.planner).toHaveLength(1);
    expect(none.dispatches).toHaveLength(2);
    for (const d of none.dispatches) expect(JSON.parse(d.body)).not.toHaveProperty('tools');
  });

  it('still decomposes a turn that asks only for server-owned tools', async () => {
    const { result, planner } = await seen(() => multimodel(ask('recommend a recipe. [plan: steps=2]', { x_exec: true })));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(1);
  });
});

describe('modalities', () => {
  const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };

  it('sends a vision sub-task with the image to a vision endpoint and the others without it', async () => {
    const { result, dispatches } = await seen(() => multimodel(ask([{ type: 'text', text: 'describe this photo. recommend a recipe. [plan: steps=2, vision]' }, image])));
    expect(result.status).toBe(200);
    const parts = dispatches.map((d) => JSON.stringify(chatBody(d).messages).includes('image_url'));
    expect(parts).toEqual([true, false]);
    const rows = await decisionsFor(result);
    expect(rows.find((r) => r.multimodel?.step_id === 's1')?.endpoint_slug).toBe('vision');
  });

  it('fetches an image URL server-side once and sends the inlined image with the vision sub-task', async () => {
    const remote = { type: 'image_url', image_url: { url: `${imageOrigin}/cat.png` } };
    const { result, dispatches } = await seen(() => multimodel(ask([{ type: 'text', text: 'describe this photo. [plan: steps=1, vision]' }, remote])));
    expect(result.status).toBe(200);
    expect(dispatches[0]?.body).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
    expect(dispatches[0]?.body).not.toContain(imageOrigin);
  });

  it('never plans an attachment away: a plan giving the image to no sub-task goes back to the planner, then one model serves the turn whole', async () => {
    // The simulator's planner plans text sub-tasks unless told [plan: vision]: twice here, so both plans drop the image.
    const body = ask([{ type: 'text', text: 'describe this photo. recommend a recipe. [plan: steps=2]' }, image]);
    const { result, planner, dispatches } = await seen(() => multimodel(body));
    expect(result.status).toBe(200);
    expect(planner).toHaveLength(2);
    expect(JSON.stringify(chatBody(planner[1] as SimRequest).messages)).toContain('but no sub-task has modality \\"vision\\"');
    expect(dispatches).toHaveLength(1);
    expect(JSON.stringify(chatBody(dispatches[0] as SimRequest).messages)).toContain('data:image/png;base64,iVBORw0KGgo=');
    expect(completion(result).x_multimodel).toBeUndefined();
    expect((await decisionsFor(result))[0]?.endpoint_slug).toBe('vision');
  });

  it('refuses an attached image no endpoint of the request accepts before planning, whatever the plan would say', async () => {
    const refused = await seen(() => multimodel(ask([{ type: 'text', text: 'describe this photo. [plan: steps=2]' }, image]), { 'x-workspace-id': WS_SOLO }));
    expectError(refused.result, 400, 'no_vision_capable_endpoint', 'messages');
    expect(errorOf(refused.result).message).toBe('The request attaches images, and no endpoint this request may use accepts images.');
    expect(refused.planner).toHaveLength(0);
    expect(refused.dispatches).toHaveLength(0);
  });

  it('refuses a sub-task needing a modality no endpoint serves, before any dispatch', async () => {
    const audio = await seen(() => multimodel(ask('transcribe this. [plan: audio]')));
    expectError(audio.result, 400, 'no_audio_input_capable_endpoint', 'messages');
    expect(audio.dispatches).toHaveLength(0);
    expectError(await multimodel(ask('what happens in this clip. [plan: video]')), 400, 'no_video_input_capable_endpoint', 'messages');
    expectError(await multimodel(ask([{ type: 'text', text: 'describe this photo. [plan: vision]' }, image]), { 'x-workspace-id': WS_SOLO }), 400, 'no_vision_capable_endpoint', 'messages');
  });
});

describe('failures', () => {
  it('answers a failed dispatch with the upstream error: unmapped is 500 internal_error, recognised keeps its mapping', async () => {
    expectError(await multimodel(ask('recommend a recipe. [plan: steps=2]', { sim: { error_status: 500 } })), 500, 'internal_error');
    expectError(await multimodel(ask('recommend a recipe. [plan: steps=3]', { sim: { error_status: 429 } })), 429, 'capacity_exceeded');
  });
});

describe('streaming', () => {
  const stream = (body: object): Promise<Response> =>
    fetch(url(), { method: 'POST', headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });

  it('streams progress chunks, the answer, usage and [DONE]', async () => {
    const res = await stream(ask('recommend a recipe. [plan: steps=3]', { stream_options: { include_usage: true } }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const frames = parseSse(await res.text());
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const chunks = chunksOf(frames) as { choices: { delta: { content?: string }; finish_reason: string | null }[]; x_multimodel_progress?: { step: string }; usage?: { completion_tokens: number } }[];
    expect(chunks.filter((c) => c.x_multimodel_progress).map((c) => c.x_multimodel_progress?.step)).toHaveLength(4);
    expect(chunks.filter((c) => c.x_multimodel_progress).at(-1)?.x_multimodel_progress?.step).toBe('synthesis');
    const content = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    expect(content.length).toBe(93);
    expect(content).not.toContain(SYNTHESIS_INSTRUCTION);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(4 * TOKENS_PER_ANSWER);
  });

  it('streams several choices, which SPEC allows on this route', async () => {
    const res = await stream(ask('recommend a recipe. [plan: steps=2]', { n: 2 }));
    const chunks = chunksOf(parseSse(await res.text())) as { choices: { index: number; finish_reason: string | null }[] }[];
    const finished = chunks.flatMap((c) => c.choices.filter((ch) => ch.finish_reason !== null).map((ch) => ch.index)).sort();
    expect(finished).toEqual([0, 1]);
  });

  it('ends a failed stream with one data frame holding the envelope, then [DONE]', async () => {
    const res = await stream(ask('recommend a recipe. [plan: steps=2]', { sim: { error_status: 500 } }));
    const frames = parseSse(await res.text());
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const error = JSON.parse(frames.at(-2)?.data ?? '{}') as { error: Record<string, unknown> };
    expect(error.error).toMatchObject({ code: 'internal_error', type: 'server_error' });
    expect(frames.at(-2)?.event).toBeNull();
  });

  it('writes the error frame once, after the last choice closed, when n is above 1', async () => {
    const res = await stream(ask('recommend a recipe. [plan: steps=2]', { n: 3, sim: { error_status: 500 } }));
    const frames = parseSse(await res.text());
    const errors = frames.filter((f) => f.data.includes('"error"'));
    expect(errors).toHaveLength(1);
    expect(frames.indexOf(errors[0] as (typeof frames)[number])).toBe(frames.length - 2);
    expect(frames.at(-1)?.data).toBe('[DONE]');
  });
});
