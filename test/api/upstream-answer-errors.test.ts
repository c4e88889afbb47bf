/**
 * What the gateway makes of a model server that reports its failure inside an answer instead of through
 * its HTTP status (SPEC principle 4: a request that cannot be served as specified returns an error, not a
 * substitute answer; "Streaming events": a mid-stream error is a `data:` frame with the error envelope then
 * `[DONE]`; README "Upstream failures"), and of a stream complete in all but its `[DONE]`. The model
 * server answers exactly the bytes each test sets; the proof is the client's answer and the usage row.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { call, errorOf, expectError } from '../helpers/http.js';
import { chunkEvent, useScriptedSuite } from '../helpers/scripted-upstream.js';
import { chunksOf, parseSse, type SseFrame } from '../helpers/sse.js';

const suite = useScriptedSuite();

const CONTENT = chunkEvent(',"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"logprobs":null,"finish_reason":null}]');
const STOP = chunkEvent(',"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]');
const USAGE = chunkEvent(',"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}');
const DONE = 'data: [DONE]\n\n';

const chat = (body: Record<string, unknown> = {}) =>
  call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: 'hi' }], ...body } });
const responses = (body: Record<string, unknown> = {}) => call(`${suite.gw.url}/${PROJECT}/chat/v1/responses`, { key: suite.keys.full, body: { model: 'client-model', input: 'hi', ...body } });

const rowOf = (res: { headers: Headers }) => suite.ledger.waitForRow(res.headers.get('x-request-id') ?? '');

/** The stream's frames, asserting it ends with the error envelope's data frame then [DONE]; returns the error. */
function streamError(frames: readonly SseFrame[]): Record<string, unknown> {
  expect(frames.at(-1)?.data).toBe('[DONE]');
  const last = frames.at(-2);
  expect(last?.event).toBeNull();
  const parsed = JSON.parse(last?.data ?? '{}') as { error?: Record<string, unknown> };
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error ?? {}).sort()).toEqual(['code', 'message', 'param', 'type']);
  return parsed.error ?? {};
}

describe('the usage row of a stream that ends in an error frame', () => {
  it('a stream cut before it finished: the error frame, and its code on the row', async () => {
    suite.upstream.answer({ body: CONTENT });
    const res = await chat({ stream: true });
    expect(streamError(parseSse(String(res.body)))).toMatchObject({ code: 'internal_error', message: expect.stringContaining('before it was complete') });
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
  });

  it("a model server's {error} frame: the mapped code on the row", async () => {
    suite.upstream.answer({ body: CONTENT + 'data: {"error":{"message":"too long","type":"BadRequestError","code":400}}\n\n' + DONE });
    const res = await chat({ stream: true });
    expect(streamError(parseSse(String(res.body)))).toMatchObject({ code: 'invalid_request' });
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'invalid_request' });
  });
});

describe('an error frame in the middle of a chat stream', () => {
  const VLLM = 'data: {"object":"error","message":"vllm stream err","type":"BadRequestError","code":400}\n\n';
  const NAMED = 'event: error\ndata: {"message":"upstream exploded","code":"boom"}\n\n';
  const OPENAI = 'data: {"error":{"message":"engine crashed","type":"server_error","code":null}}\n\n';

  for (const includeUsage of [false, true]) {
    it(`vLLM's error object becomes the error frame (400 -> invalid_request, its message kept) then [DONE], billed as an error${includeUsage ? ' (include_usage)' : ''}`, async () => {
      suite.upstream.answer({ body: CONTENT + VLLM + DONE });
      const res = await chat({ stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) });
      expect(res.status).toBe(200);
      const frames = parseSse(String(res.body));
      expect(streamError(frames)).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error', message: expect.stringContaining('vllm stream err') });
      // The content before it is delivered; the error object itself is never relayed as a chunk.
      const chunks = chunksOf(frames.slice(0, -2));
      expect(chunks.map((c) => c.object)).toEqual(['chat.completion.chunk']);
      expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'invalid_request' });
    });
  }

  it('an SSE `event: error` becomes the error frame (no HTTP status: 500 internal_error), the upstream message kept', async () => {
    suite.upstream.answer({ body: CONTENT + NAMED + DONE });
    const res = await chat({ stream: true });
    const error = streamError(parseSse(String(res.body)));
    expect(error).toMatchObject({ code: 'internal_error', type: 'server_error', message: expect.stringContaining('upstream exploded') });
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
  });

  it("a top-level {error} frame keeps the model server's message", async () => {
    suite.upstream.answer({ body: CONTENT + OPENAI + DONE });
    const res = await chat({ stream: true });
    expect(streamError(parseSse(String(res.body)))).toMatchObject({ code: 'internal_error', message: expect.stringContaining('engine crashed') });
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
  });

  it('on /v1/responses the Response ends failed with the code and the upstream message', async () => {
    suite.upstream.answer({ body: CONTENT + VLLM + DONE });
    const res = await responses({ stream: true });
    const frames = parseSse(String(res.body));
    const failed = frames.find((f) => f.event === 'response.failed');
    expect(frames.map((f) => f.event)).not.toContain('response.completed');
    expect(JSON.parse(failed?.data ?? '{}')).toMatchObject({ response: { status: 'failed', error: { code: 'invalid_request', message: expect.stringContaining('vllm stream err') } } });
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'invalid_request' });
  });
});

describe('an HTTP 200 whose body is not a completion', () => {
  it('an {error} body: the mapped error with the upstream message, billed as an error', async () => {
    suite.upstream.answer({ body: '{"error":{"message":"model overloaded","type":"server_error","code":"overloaded"}}' });
    const res = await chat();
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toContain('model overloaded');
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
  });

  it("vLLM's error object with its status as code: 400 invalid_request", async () => {
    suite.upstream.answer({ body: '{"object":"error","message":"bad things","type":"BadRequestError","param":null,"code":400}' });
    const res = await chat();
    expectError(res, 400, 'invalid_request');
    expect(errorOf(res).message).toContain('bad things');
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'invalid_request' });
  });

  it('a body with no choices array and no error: 500 internal_error naming the problem', async () => {
    suite.upstream.answer({ body: '{"id":"x","object":"chat.completion","created":1,"model":"up"}' });
    const res = await chat();
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/choices/);
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
  });

  it('on /v1/responses: the error, and the Response is not stored as completed', async () => {
    suite.upstream.answer({ body: '{"error":{"message":"model overloaded","type":"server_error","code":"overloaded"}}' });
    const res = await responses();
    expect({ status: res.status, code: errorOf(res).code }).toEqual({ status: 500, code: 'internal_error' });
    expect(errorOf(res).message).toContain('model overloaded');
    expect(await rowOf(res)).toMatchObject({ status: 'error', error_code: 'internal_error' });
    const stored = await call(`${suite.gw.url}/${PROJECT}/v1/responses/${res.headers.get('x-request-id') ?? ''}`, { key: suite.keys.full });
    expect(stored.status).toBe(404);
  });
});

describe('a stream that ends without [DONE]', () => {
  it('is complete when its choice has finished: ends with [DONE], billed completed with the reported usage', async () => {
    suite.upstream.answer({ body: CONTENT + STOP + USAGE });
    const res = await chat({ stream: true, stream_options: { include_usage: true } });
    const frames = parseSse(String(res.body));
    expect(frames.at(-1)?.data).toBe('[DONE]');
    expect(frames.some((f) => f.data.includes('"error"'))).toBe(false);
    expect(chunksOf(frames).at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } });
    expect(await rowOf(res)).toMatchObject({ status: 'completed', error_code: null, prompt_tokens: 7, completion_tokens: 2, usage_source: 'upstream' });
  });

  it('on /v1/responses: a finished stream completes the Response', async () => {
    suite.upstream.answer({ body: CONTENT + STOP + USAGE });
    const res = await responses({ stream: true });
    const events = parseSse(String(res.body)).map((f) => f.event);
    expect(events).toContain('response.completed');
    expect(events).not.toContain('response.failed');
    expect(await rowOf(res)).toMatchObject({ status: 'completed', error_code: null });
  });
});
