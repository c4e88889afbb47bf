/**
 * What a client gets from the error answers of real model servers, each in its own shape (found from
 * outside with a mock upstream): the server's own message, whatever its shape (OpenAI's `error.message`,
 * TGI's and Ollama's `error` string, FastAPI's `detail`, plain text); a context overflow recognized in
 * TGI's and vLLM's wordings and on 413/422 too; every 4xx the client's own (400 invalid_request, not
 * retryable) except those that are the gateway's configuration (401/403/404) or a 429; and the retry
 * hints a server gives (retry-after-ms, an HTTP-date Retry-After, a 503's Retry-After) passed on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { startScriptedUpstream, type ScriptedAnswer, type ScriptedUpstream } from '../helpers/scripted-upstream.js';

const keys = makeKeys();
let upstream: ScriptedUpstream;
let gw: GatewayProcess;

beforeAll(async () => {
  upstream = await startScriptedUpstream();
  const config = testConfig(upstream.url, keys, { security: { allow_private_targets: true, allow_http_targets: true } });
  // Many 503s in a row here: keep the one server in its pool throughout.
  for (const e of config.projects[0]?.endpoints ?? []) (e.upstream as Record<string, unknown>).health = { failure_threshold: 100 };
  gw = await startGatewayProcess(config);
});

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

async function chatAnswering(answer: ScriptedAnswer): Promise<JsonResponse> {
  upstream.answer(answer);
  return call(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: keys.full, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }] } });
}

describe("the model server's own message, in every common shape", () => {
  it.each([
    ['OpenAI error.message', 400, '{"error":{"message":"temperature must be at most 2","type":"invalid_request_error"}}', 'temperature must be at most 2'],
    ['Ollama / TGI error string', 400, '{"error":"invalid stop sequence","error_type":"validation"}', 'invalid stop sequence'],
    ['top-level message (older vLLM)', 400, '{"object":"error","message":"best_of must be 1","type":"BadRequestError","code":400}', 'best_of must be 1'],
    ['FastAPI detail string', 400, '{"detail":"unsupported response_format"}', 'unsupported response_format'],
    ['FastAPI detail list', 422, '{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}', 'field required'],
    ['plain text', 400, 'invalid stop sequence', 'invalid stop sequence'],
  ])('%s: 400 invalid_request carrying it', async (_shape, status, body, message) => {
    const res = await chatAnswering({ status, body });
    expectError(res, 400, 'invalid_request');
    expect(errorOf(res).message).toContain(message);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it("TGI's 422 context overflow is 400 context_length_exceeded with TGI's text", async () => {
    const tgi = 'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`';
    const res = await chatAnswering({ status: 422, body: JSON.stringify({ error: tgi, error_type: 'validation' }) });
    expectError(res, 400, 'context_length_exceeded', 'max_tokens');
    expect(errorOf(res).message).toContain(tgi);
  });

  it("vLLM's 'longer than the maximum model length' is a context overflow", async () => {
    const res = await chatAnswering({ status: 400, body: '{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096.","type":"BadRequestError","code":400}}' });
    expectError(res, 400, 'context_length_exceeded', 'max_tokens');
  });

  it("Ollama's 404 naming a model is the configured model missing, not a wrong base URL", async () => {
    const res = await chatAnswering({ status: 404, body: `{"error":"model 'llama3' not found, try pulling it first"}` });
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/does not serve this endpoint's configured model/);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });
});

describe('other 4xx from the model server', () => {
  it.each([
    [413, '{"error":{"message":"Request too large"}}', 'Request too large'],
    [409, '{"error":{"message":"conflicting options"}}', 'conflicting options'],
  ])('%i: 400 invalid_request with its message, not retryable', async (status, body, message) => {
    const res = await chatAnswering({ status, body });
    expectError(res, 400, 'invalid_request');
    expect(errorOf(res).message).toContain(message);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it("TEI's 413 on embeddings: the same", async () => {
    upstream.answer({ status: 413, body: '{"error":"batch size 64 > maximum allowed batch size 32","error_type":"validation"}' });
    const res = await call(`${gw.url}/${PROJECT}/embed/v1/embeddings`, { key: keys.full, body: { model: 'x', input: ['a', 'b'] } });
    expectError(res, 400, 'invalid_request');
    expect(errorOf(res).message).toContain('batch size 64 > maximum allowed batch size 32');
    expect(res.headers.get('x-should-retry')).toBe('false');
  });
});

describe("the model server's retry hints", () => {
  it('a 429 with retry-after-ms: Retry-After and retry_after are its seconds, rounded up', async () => {
    const res = await chatAnswering({ status: 429, body: '{"error":{"message":"busy"}}', headers: { 'retry-after-ms': '2500', 'retry-after': new Date(Date.now() + 60_000).toUTCString() } });
    expectError(res, 429, 'capacity_exceeded');
    expect(res.headers.get('retry-after')).toBe('3');
    expect(errorOf(res).retry_after).toBe(3);
  });

  it('a 429 with an HTTP-date Retry-After: the seconds until then', async () => {
    const res = await chatAnswering({ status: 429, body: '{"error":{"message":"busy"}}', headers: { 'retry-after': new Date(Date.now() + 30_000).toUTCString() } });
    expectError(res, 429, 'capacity_exceeded');
    const seconds = Number(res.headers.get('retry-after'));
    // An HTTP-date has whole seconds: 29 to 30 s from now, read a moment later.
    expect(seconds).toBeGreaterThanOrEqual(28);
    expect(seconds).toBeLessThanOrEqual(30);
    expect(errorOf(res).retry_after).toBe(seconds);
  });

  it('a 503 with Retry-After: 500 internal_error, retryable, carrying Retry-After', async () => {
    const res = await chatAnswering({ status: 503, body: '{"error":"server busy, please try again. maximum pending requests exceeded"}', headers: { 'retry-after': '3' } });
    expectError(res, 500, 'internal_error');
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('x-should-retry')).toBe('true');
    expect(errorOf(res).message).toMatch(/retry after 3 s/);
  });
});
