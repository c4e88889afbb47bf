import { describe, expect, it } from 'vitest';
import { DEFAULT_REASONING_TOKENS } from '../../src/simulator/chat-completion.js';
import { PROJECT } from '../helpers/configs.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call } from '../helpers/http.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { lastSimRequest, simSeq } from '../helpers/simulator-log.js';

const suite = useGatewaySuite();

const url = (slug: string): string => `${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`;

async function postRaw(slug: string, raw: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url(slug), { method: 'POST', headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', ...headers }, body: raw });
}

/** Every parameter of SPEC's request table (bar reasoning, audio: see below), odd spacing and an unknown field. */
const EVERY_PARAMETER = `{
  "model" :  "client-model-name",
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": "caf\\u00e9 ✓"},
    {"role": "user", "content": [{"type": "text", "text": "hello"}], "name": "alice"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\\"q\\":1}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "42"}
  ],
  "max_tokens": 64, "max_completion_tokens": 32, "temperature": 1.0, "top_p": 0.95,
  "stop": ["\\n\\nEND"], "frequency_penalty": 0.5, "presence_penalty": -0.5, "top_k": 40, "min_p": 0.05,
  "repetition_penalty": 1.1, "n": 2, "seed": 7, "logprobs": true, "top_logprobs": 3, "logit_bias": {"50256": -100},
  "tools": [{"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}}, "strict": true}}],
  "tool_choice": "auto", "parallel_tool_calls": false,
  "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": true}},
  "metadata": {"team": "search"}, "user": "user-1", "store": false, "service_tier": "flex",
  "prediction": {"type": "content", "content": "The answer"}, "modalities": ["text"],
  "x_vendor_extension": {"keep": [1, 2.50, "me"]}
}`;

describe('faithful passthrough', () => {
  it('sends the client body byte for byte except model, which becomes the upstream model', async () => {
    const res = await postRaw('chat', EVERY_PARAMETER);
    expect(res.status).toBe(200);
    const received = await lastSimRequest(suite.sim.url);
    expect(received.body).toBe(EVERY_PARAMETER.replace('"client-model-name"', '"sim-chat"'));
  });

  it('passes reasoning parameters through unchanged when the model supports them as sent', async () => {
    const body = '{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"medium","reasoning":{"effort":"medium","max_tokens":50},"include_reasoning":true}';
    expect((await postRaw('reasoner', body)).status).toBe(200);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-reasoner"'));
  });

  it('sends a streaming request through unchanged too', async () => {
    const body = '{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}';
    const res = await postRaw('chat', body);
    await res.text();
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });

  it('makes exactly one upstream request per client request, also when the upstream fails', async () => {
    const before = await simSeq(suite.sim.url);
    await postRaw('chat', '{"model":"m","messages":[{"role":"user","content":"a"}]}');
    await postRaw('chat', '{"model":"m","messages":[{"role":"user","content":"b"}],"sim":{"error_status":503}}');
    expect(await simSeq(suite.sim.url)).toBe(before + 2);
  });

  it('maps the effort SPEC adjusts and reports it in x_adjusted_reasoning_effort', async () => {
    const res = await call(url('reasoner'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'xhigh' } });
    expect((res.body as Record<string, unknown>).x_adjusted_reasoning_effort).toBe('high');
    expect(JSON.parse((await lastSimRequest(suite.sim.url)).body).reasoning_effort).toBe('high');
  });
});

describe('the non-streaming response', () => {
  it('echoes the model, matches id and X-Request-ID, and carries every SPEC field', async () => {
    const res = await call(url('chat'), { key: suite.keys.full, body: { model: 'whatever-I-said', messages: [{ role: 'user', content: 'hello' }], service_tier: 'priority' } });
    expect(res.status).toBe(200);
    const body = res.body as Record<string, unknown>;
    expect(body.id).toBe(res.headers.get('x-request-id'));
    expect(body).toMatchObject({ object: 'chat.completion', model: 'whatever-I-said', service_tier: 'priority', system_fingerprint: null });
    const choice = (body.choices as Record<string, unknown>[])[0];
    expect(choice).toMatchObject({ index: 0, finish_reason: 'stop', logprobs: null });
    expect(choice?.message).toMatchObject({ role: 'assistant', refusal: null, tool_calls: null, annotations: [] });
    expect(choice?.message).not.toHaveProperty('reasoning');
    expect(body.usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: null },
      completion_tokens_details: { reasoning_tokens: null, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
    });
  });

  it.each([
    ['flex', 'flex'],
    ['auto', 'default'],
    ['scale', 'default'],
    ['turbo', 'default'],
  ])('resolves service_tier %s to the %s lane', async (sent, lane) => {
    const res = await call(url('chat'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], service_tier: sent } });
    expect((res.body as Record<string, unknown>).service_tier).toBe(lane);
  });

  it('returns tool calls with finish_reason tool_calls', async () => {
    const res = await call(url('chat'), {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }] },
    });
    const choice = ((res.body as Record<string, unknown>).choices as Record<string, unknown>[])[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect((choice?.message as Record<string, unknown>).tool_calls).toEqual([expect.objectContaining({ type: 'function', function: { name: 'f', arguments: '{"a":"sample"}' } })]);
  });
});

describe('the reasoning channel', () => {
  it('returns separate reasoning on reasoning and reasoning_content, identical, and bills it', async () => {
    const res = await call(url('reasoner'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'think' }] } });
    const body = res.body as { choices: { message: Record<string, unknown> }[]; usage: { completion_tokens: number; completion_tokens_details: { reasoning_tokens: number } } };
    const message = body.choices[0]?.message ?? {};
    expect(typeof message.reasoning).toBe('string');
    expect(message.reasoning).toBe(message.reasoning_content);
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(DEFAULT_REASONING_TOKENS);
  });

  it.each([
    ['reasoning.exclude', { reasoning: { exclude: true } }],
    ['include_reasoning: false', { include_reasoning: false }],
  ])('omits reasoning with %s but still counts its tokens', async (_label, extra) => {
    const res = await call(url('reasoner'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'think' }], ...extra } });
    const body = res.body as { choices: { message: Record<string, unknown> }[]; usage: { completion_tokens_details: { reasoning_tokens: number } } };
    expect(body.choices[0]?.message).not.toHaveProperty('reasoning');
    expect(body.choices[0]?.message).not.toHaveProperty('reasoning_content');
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(DEFAULT_REASONING_TOKENS);
  });

  it('streams reasoning deltas ahead of the first content delta, without logprobs on reasoning chunks', async () => {
    const res = await call(url('reasoner'), { key: suite.keys.full, body: { model: 'm', stream: true, logprobs: true, messages: [{ role: 'user', content: 'think' }] } });
    const chunks = chunksOf(parseSse(String(res.body)));
    const deltas = chunks.map((c) => (c.choices as { delta: Record<string, unknown>; logprobs: unknown }[])[0]).filter((c) => c !== undefined);
    const firstContent = deltas.findIndex((d) => typeof d.delta.content === 'string' && d.delta.content !== '');
    const lastReasoning = deltas.map((d) => 'reasoning' in d.delta).lastIndexOf(true);
    expect(lastReasoning).toBeGreaterThanOrEqual(0);
    expect(lastReasoning).toBeLessThan(firstContent);
    for (const d of deltas.filter((x) => 'reasoning' in x.delta)) {
      expect(d.delta.reasoning).toBe(d.delta.reasoning_content);
      expect(d.logprobs).toBeNull();
    }
  });

  it('moves inline think text out of content when Reasoning-Normalization is on', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'think' }], sim: { inline_think: true } };
    const plain = await call(url('reasoner'), { key: suite.keys.full, body });
    expect(JSON.stringify(plain.body)).toContain('<think>');
    const normalized = await call(url('reasoner'), { key: suite.keys.full, body, headers: { 'x-service-augment-reasoning-normalization': 'Yes' } });
    const message = (normalized.body as { choices: { message: { content: string; reasoning: string } }[] }).choices[0]?.message;
    expect(message?.content).not.toContain('think>');
    expect(message?.reasoning.trim().split(' ')).toHaveLength(DEFAULT_REASONING_TOKENS);
    const streamed = await call(url('reasoner'), { key: suite.keys.full, body: { ...body, stream: true }, headers: { 'x-service-augment-reasoning-normalization': 'on' } });
    const content = chunksOf(parseSse(String(streamed.body)))
      .map((c) => ((c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? ''))
      .join('');
    expect(content).toBe(message?.content);
  });

  it('treats a header value other than on/off/1/0/true/false/yes/no as absent', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'think' }], sim: { inline_think: true } };
    const res = await call(url('reasoner'), { key: suite.keys.full, body, headers: { 'x-service-augment-reasoning-normalization': 'maybe' } });
    expect(JSON.stringify(res.body)).toContain('<think>');
  });
});

describe('logprobs', () => {
  it('covers exactly the delivered content tokens, streamed or not', async () => {
    const body = { model: 'm', logprobs: true, top_logprobs: 2, messages: [{ role: 'user', content: 'count' }], sim: { tokens: 7 } };
    const res = await call(url('reasoner'), { key: suite.keys.full, body });
    const lp = (res.body as { choices: { logprobs: { content: { top_logprobs: unknown[] }[] } }[] }).choices[0]?.logprobs;
    expect(lp?.content).toHaveLength(7);
    expect(lp?.content[0]?.top_logprobs).toHaveLength(2);
    const streamed = await call(url('reasoner'), { key: suite.keys.full, body: { ...body, stream: true } });
    const entries = chunksOf(parseSse(String(streamed.body))).flatMap((c) => ((c.choices as { logprobs: { content: unknown[] } | null }[])[0]?.logprobs?.content ?? []));
    expect(entries).toHaveLength(7);
  });
});

describe('max tokens clamping', () => {
  const big = { model: 'm', max_tokens: 1000, messages: [{ role: 'user', content: 'hello' }] };

  it('refuses output that does not fit the window with context_length_exceeded', async () => {
    const res = await call(url('small'), { key: suite.keys.full, body: big });
    expect(res.status).toBe(400);
    expect((res.body as { error: Record<string, unknown> }).error).toMatchObject({ code: 'context_length_exceeded', param: 'max_tokens', type: 'invalid_request_error' });
    expect((res.body as { error: { message: string } }).error.message).toContain('256');
  });

  it('lowers the in-effect max to what is left when clamping is on, preferring max_completion_tokens', async () => {
    expect((await call(url('small'), { key: suite.keys.full, body: big, headers: { 'x-service-augment-max-output-tokens-clamp': 'on' } })).status).toBe(200);
    const sent = JSON.parse((await lastSimRequest(suite.sim.url)).body) as { max_tokens: number };
    expect(sent.max_tokens).toBe(247);
    expect(sent.max_tokens).toBeLessThan(256);
    await call(url('small'), { key: suite.keys.full, body: { ...big, max_completion_tokens: 900 }, headers: { 'x-service-augment': 'on' } });
    const both = JSON.parse((await lastSimRequest(suite.sim.url)).body) as { max_tokens: number; max_completion_tokens: number };
    expect(both.max_tokens).toBe(1000);
    expect(both.max_completion_tokens).toBeLessThan(256);
  });
});
