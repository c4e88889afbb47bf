import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/server.js';

// Exercises the simulator over real HTTP, the way the gateway and benchmarks use it.

interface ChatChoice {
  index: number;
  message: { role: string; content: string | null; reasoning_content?: string; tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[] };
  logprobs: { content: { token: string; logprob: number; top_logprobs: unknown[] }[] | null; refusal: null } | null;
  finish_reason: string;
}
interface ChatBody {
  id: string;
  object: string;
  model: string;
  choices: ChatChoice[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; completion_tokens_details: { reasoning_tokens: number } };
  system_fingerprint: string;
}
interface Chunk {
  object: string;
  choices: { index: number; delta: Record<string, unknown>; logprobs: unknown; finish_reason: string | null }[];
  usage?: { completion_tokens: number };
}
interface LogEntry {
  seq: number;
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  aborted: boolean;
  completed: boolean;
}

let sim: RunningSimulator;
let base: string;

beforeAll(async () => {
  sim = await startSimulator({ port: 0, reasoningModels: ['custom-r1'] });
  base = sim.url.replace(/\/v1$/, '');
});

afterAll(async () => {
  await sim.close();
});

const msgs = (content: string): { role: string; content: string }[] => [{ role: 'user', content }];

function post(path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ChatBody> {
  const res = await post('/chat/completions', { model: 'sim-chat', messages: msgs('hello'), ...body }, headers);
  expect(res.status).toBe(200);
  return (await res.json()) as ChatBody;
}

/** Splits an SSE body into parsed chunks; `done` tells whether [DONE] terminated it. */
function parseSse(text: string): { chunks: Chunk[]; done: boolean } {
  const events = text.split('\n\n').filter((e) => e.length > 0);
  const done = events[events.length - 1] === 'data: [DONE]';
  const chunks = events.filter((e) => e !== 'data: [DONE]').map((e) => {
    expect(e.startsWith('data: ')).toBe(true);
    return JSON.parse(e.slice(6)) as Chunk;
  });
  return { chunks, done };
}

async function streamChat(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ chunks: Chunk[]; done: boolean }> {
  const res = await post('/chat/completions', { model: 'sim-chat', messages: msgs('hello'), stream: true, ...body }, headers);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  return parseSse(await res.text());
}

async function requestLog(limit = 20): Promise<LogEntry[]> {
  const res = await fetch(`${base}/__sim/requests?limit=${limit}`);
  return ((await res.json()) as { data: LogEntry[] }).data;
}

/** Reads a stream until the connection dies; returns what arrived and whether it errored. */
async function readUntilError(res: Response): Promise<{ text: string; errored: boolean }> {
  const reader = res.body?.getReader();
  if (!reader) throw new Error('no body');
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, errored: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, errored: true };
  }
}

describe('simulator: chat completions', () => {
  it('returns an OpenAI-shaped non-streaming completion', async () => {
    const body = await chat({});
    expect(body.object).toBe('chat.completion');
    expect(body.id).toMatch(/^chatcmpl-sim-\d+$/);
    expect(body.model).toBe('sim-chat');
    expect(body.system_fingerprint).toBe('sim');
    expect(body.choices).toHaveLength(1);
    expect(body.choices[0]?.message.role).toBe('assistant');
    expect(body.choices[0]?.message.content?.split(' ')).toHaveLength(16);
    expect(body.choices[0]?.finish_reason).toBe('stop');
    expect(body.choices[0]?.logprobs).toBeNull();
    expect(body.usage.completion_tokens).toBe(16);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 16);
    // Same request, same answer.
    expect((await chat({})).choices[0]?.message.content).toBe(body.choices[0]?.message.content);
  });

  it('streams role, tokens, finish, usage and [DONE] matching the non-streamed text', async () => {
    const { chunks, done } = await streamChat({ stream_options: { include_usage: true } });
    expect(done).toBe(true);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    const tokens = chunks.slice(1, -2).map((c) => c.choices[0]?.delta['content']);
    expect(tokens).toHaveLength(16);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(16);
    expect(tokens.join('')).toBe((await chat({})).choices[0]?.message.content);
  });

  it('omits the usage chunk without include_usage', async () => {
    const { chunks, done } = await streamChat({});
    expect(done).toBe(true);
    expect(chunks.some((c) => c.usage !== undefined)).toBe(false);
  });

  it('supports n=2 both ways', async () => {
    const body = await chat({ n: 2 });
    expect(body.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(body.choices[0]?.message.content).not.toBe(body.choices[1]?.message.content);
    const { chunks } = await streamChat({ n: 2 }, { 'x-sim-tokens': '3' });
    const finishes = chunks.flatMap((c) => c.choices).filter((c) => c.finish_reason !== null);
    expect(finishes.map((c) => c.index).sort()).toEqual([0, 1]);
    for (const i of [0, 1]) {
      const text = chunks.flatMap((c) => c.choices).filter((c) => c.index === i).map((c) => c.delta['content'] ?? '').join('');
      expect(text.split(' ')).toHaveLength(3);
    }
  });

  it('cuts at max_tokens with finish_reason length', async () => {
    const body = await chat({ max_tokens: 4 });
    expect(body.choices[0]?.finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBe(4);
  });

  it('honours stop sequences', async () => {
    const body = await chat({ messages: msgs('echo: one two three'), stop: [' three'] });
    expect(body.choices[0]?.message.content).toBe('one two');
    expect(body.choices[0]?.finish_reason).toBe('stop');
  });

  it('calls a tool and then answers the tool result', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const first = await chat({ tools });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.message.content).toBeNull();
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.function).toEqual({ name: 'get_weather', arguments: '{"city":"sample"}' });

    const { chunks } = await streamChat({ tools });
    const delta = chunks.flatMap((c) => c.choices).find((c) => c.delta['tool_calls'] !== undefined);
    expect(delta?.delta['tool_calls']).toEqual([{ index: 0, id: call?.id, type: 'function', function: call?.function }]);

    const second = await chat({
      tools,
      messages: [...msgs('hello'), first.choices[0]?.message, { role: 'tool', tool_call_id: call?.id, content: '{"temp":20}' }],
    });
    expect(second.choices[0]?.message.content).toMatch(/^Tool result received:/);
    expect(second.choices[0]?.finish_reason).toBe('stop');
  });

  it('emits reasoning_content for reasoning models', async () => {
    const body = await chat({ model: 'sim-reasoner' });
    expect(body.choices[0]?.message.reasoning_content?.split(' ')).toHaveLength(8);
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(8);
    expect(body.usage.completion_tokens).toBe(24);

    const { chunks } = await streamChat({ model: 'custom-r1' }, { 'x-sim-reasoning-tokens': '2', 'x-sim-tokens': '2' });
    expect(chunks.map((c) => Object.keys(c.choices[0]?.delta ?? {}).join())).toEqual([
      'role,content',
      'reasoning_content',
      'reasoning_content',
      'content',
      'content',
      '',
    ]);

    const inline = await chat({ model: 'sim-reasoner', messages: msgs('echo: ok') }, { 'x-sim-inline-think': '1', 'x-sim-reasoning-tokens': '1' });
    expect(inline.choices[0]?.message.content).toMatch(/^<think>\w+<\/think>ok$/);
    expect(inline.choices[0]?.message.reasoning_content).toBeUndefined();

    const off = await chat({ model: 'sim-reasoner', reasoning_effort: 'none' });
    expect(off.choices[0]?.message.reasoning_content).toBeUndefined();
  });

  it('returns logprobs for content tokens only', async () => {
    const body = await chat({ model: 'sim-reasoner', logprobs: true, top_logprobs: 2 });
    const content = body.choices[0]?.logprobs?.content;
    expect(content).toHaveLength(16);
    expect(content?.[0]?.top_logprobs).toHaveLength(2);
    const { chunks } = await streamChat({ logprobs: true }, { 'x-sim-tokens': '2' });
    expect(chunks[1]?.choices[0]?.logprobs).toMatchObject({ content: [{ token: chunks[1]?.choices[0]?.delta['content'] }], refusal: null });
  });

  it('rejects bad JSON and unknown routes with the error envelope', async () => {
    const bad = await post('/chat/completions', '{nope');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null } });
    const missing = await fetch(`${base}/v1/nothing`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain('/v1/nothing');
  });
});

describe('simulator: other routes', () => {
  it('embeds deterministically', async () => {
    const res = await post('/embeddings', { model: 'sim-embed', input: ['the cat sat', 'the cat sat'], dimensions: 16 });
    const body = (await res.json()) as { object: string; data: { index: number; embedding: number[] }[]; usage: { prompt_tokens: number } };
    expect(body.object).toBe('list');
    expect(body.data).toHaveLength(2);
    expect(body.data[0]?.embedding).toHaveLength(16);
    expect(body.data[0]?.embedding).toEqual(body.data[1]?.embedding);
    // ceil(11 bytes / 4) per input.
    expect(body.usage.prompt_tokens).toBe(3 + 3);
    const b64 = (await (await post('/embeddings', { input: 'x', encoding_format: 'base64' })).json()) as { data: { embedding: string }[] };
    expect(Buffer.from(b64.data[0]?.embedding ?? '', 'base64')).toHaveLength(256 * 4);
  });

  it('lists models including ones seen in requests', async () => {
    await chat({ model: 'seen-model' });
    const body = (await (await fetch(`${sim.url}/models`)).json()) as { data: { id: string; owned_by: string }[] };
    const ids = body.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['sim-chat', 'sim-reasoner', 'sim-embed', 'seen-model']));
    expect(body.data[0]?.owned_by).toBe('simulator');
  });

  it('answers health checks', async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('simulator: knobs', () => {
  it('delays responses', async () => {
    const started = performance.now();
    await chat({}, { 'x-sim-delay-ms': '15', 'x-sim-tokens': '3' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
    const streamStart = performance.now();
    const { done } = await streamChat({ sim: { delay_ms: 10, tokens: 3 } });
    expect(done).toBe(true);
    expect(performance.now() - streamStart).toBeGreaterThanOrEqual(25);
  });

  it('simulates error statuses', async () => {
    const res = await post('/chat/completions', { messages: msgs('x') }, { 'x-sim-error-status': '503' });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: { message: expect.any(String), type: 'server_error', code: 'simulated_error', param: null } });
    const ctx = await post('/chat/completions', { messages: msgs('x'), sim: { error_status: 400, error_code: 'context_length_exceeded' } });
    expect(ctx.status).toBe(400);
    const body = (await ctx.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('context_length_exceeded');
    expect(body.error.message).toContain("maximum context length is");
  });

  it('drops the connection mid-stream with fail-after', async () => {
    const res = await post('/chat/completions', { messages: msgs('x'), stream: true }, { 'x-sim-fail-after': '2' });
    expect(res.status).toBe(200);
    const { text, errored } = await readUntilError(res);
    expect(errored).toBe(true);
    const { chunks, done } = parseSse(text);
    expect(done).toBe(false);
    expect(chunks.filter((c) => typeof c.choices[0]?.delta['content'] === 'string' && c.choices[0]?.delta['role'] === undefined)).toHaveLength(2);
    await expect(post('/chat/completions', { messages: msgs('x') }, { 'x-sim-fail-after': '0' })).rejects.toThrow();
  });

  it('sets cached tokens', async () => {
    const body = (await chat({}, { 'x-sim-cached-tokens': '3' })) as ChatBody & { usage: { prompt_tokens_details: { cached_tokens: number } } };
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(3);
  });
});

describe('simulator: request log', () => {
  it('records the raw body and headers, newest first', async () => {
    await fetch(`${base}/__sim/requests`, { method: 'DELETE' });
    const raw = '{ "model" : "sim-chat",\n  "messages": [{"role":"user","content":"héllo"}], "extra": 1 }';
    await post('/chat/completions', raw, { authorization: 'Bearer sk-test', 'X-Custom': 'Yes' });
    await fetch(`${base}/healthz`);
    const log = await requestLog();
    expect(log.map((e) => e.path)).toEqual(['/healthz', '/v1/chat/completions']);
    const entry = log[1];
    expect(entry?.body).toBe(raw);
    expect(entry?.method).toBe('POST');
    expect(entry?.headers['authorization']).toBe('Bearer sk-test');
    expect(entry?.headers['x-custom']).toBe('Yes');
    expect(entry?.completed).toBe(true);
    expect(entry?.aborted).toBe(false);
    expect(await requestLog(1)).toHaveLength(1);
  });

  it('records a client abort mid-stream', async () => {
    await fetch(`${base}/__sim/requests`, { method: 'DELETE' });
    const controller = new AbortController();
    const res = await post('/chat/completions', { messages: msgs('x'), stream: true }, { 'x-sim-delay-ms': '20', 'x-sim-tokens': '500' }, controller.signal);
    const reader = res.body?.getReader();
    await reader?.read();
    controller.abort();
    let entry: LogEntry | undefined;
    for (let i = 0; i < 100; i++) {
      entry = (await requestLog(1))[0];
      if (entry?.aborted) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(entry?.aborted).toBe(true);
    expect(entry?.completed).toBe(false);
  });
});
