import { describe, expect, it } from 'vitest';
import { causeOf, failedCompletion, mapReportedError, mapUpstreamError, noServerAvailable, retryAfterSeconds, sentNothing, transportFailure, unreachableUpstream } from '../../../src/upstream/upstream-errors.js';

const errno = (code: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(`${code} happened`), { code, ...extra });

describe('mapUpstreamError', () => {
  it.each([
    [401, 500, 'internal_error', /refused the gateway's own credentials \(HTTP 401 from upstream\).*upstream API key/],
    [403, 500, 'internal_error', /refused the gateway's own credentials \(HTTP 403 from upstream\)/],
    [404, 500, 'internal_error', /no such route \(HTTP 404 from upstream\).*base URL is misconfigured/],
    [503, 500, 'internal_error', /overloaded or unavailable \(HTTP 503 from upstream\); retry after 7 s\.$/],
    [500, 500, 'internal_error', /failed \(HTTP 500 from upstream\); retry after 7 s\.$/],
    [429, 429, 'capacity_exceeded', /overloaded \(HTTP 429 from upstream\); retry after 7 s/],
    [504, 408, 'timeout', /timed out \(HTTP 504 from upstream\)/],
    [400, 400, 'invalid_request', /rejected the request/],
  ])('maps HTTP %i from upstream to %i %s with a message naming the cause', (upstream, status, code, message) => {
    const e = mapUpstreamError(upstream, '{"error":{"message":"nope"}}', 7);
    expect({ status: e.status, code: e.code }).toEqual({ status, code });
    expect(e.message).toMatch(message);
  });

  it('keeps the 429 retry hint in the header and the body', () => {
    const e = mapUpstreamError(429, '', 7);
    expect(e.headers).toEqual({ 'Retry-After': '7' });
    expect(e.extra).toEqual({ retry_after: 7, retry_strategy: { type: 'exponential', initial_delay_ms: 7000, max_delay_ms: 60_000, multiplier: 2, jitter: true } });
  });

  it('tells an unknown model apart from a wrong base URL on a 404', () => {
    expect(mapUpstreamError(404, '{"error":{"code":"model_not_found","message":"The model `x` does not exist"}}', null).message).toMatch(/does not serve this endpoint's configured model/);
  });

  it('keeps recognized conditions: context overflow stays context_length_exceeded', () => {
    expect(mapUpstreamError(400, '{"error":{"message":"This model\'s maximum context length is 8192 tokens"}}', null).code).toBe('context_length_exceeded');
  });
});

describe("the model server's message, in the shapes servers send", () => {
  const rejected = (status: number, body: string) => mapUpstreamError(status, body, null);

  it.each([
    ['OpenAI error.message', '{"error":{"message":"temperature must be at most 2"}}', 'temperature must be at most 2'],
    ['TGI / Ollama error string', '{"error":"invalid stop sequence","error_type":"validation"}', 'invalid stop sequence'],
    ['top-level message', '{"object":"error","message":"best_of must be 1","code":400}', 'best_of must be 1'],
    ['FastAPI detail string', '{"detail":"unsupported response_format"}', 'unsupported response_format'],
    ['FastAPI detail list', '{"detail":[{"loc":["body","messages"],"msg":"field required"},{"msg":"bad n"}]}', 'field required (body.messages); bad n'],
    ['plain text', 'invalid stop sequence\n', 'invalid stop sequence'],
    ["an HTML page's title", '<html><head><title>Bad Request</title></head><body>...</body></html>', 'Bad Request'],
  ])('reads %s (it was lost outside OpenAI\'s shape)', (_shape, body, message) => {
    const e = rejected(400, body);
    expect(e.code).toBe('invalid_request');
    expect(e.message).toBe(`The model server rejected the request: ${message}`);
  });

  it('keeps the message on one line and at most 500 characters', () => {
    const e = rejected(400, JSON.stringify({ error: `line one\r\n\u0007line two ${'x'.repeat(1000)}` }));
    expect(e.message).toMatch(/: line one line two x+$/);
    expect(e.message.length).toBe('The model server rejected the request: '.length + 500);
  });

  it('says nothing of a body with no message', () => {
    expect(rejected(400, '{"error":{}}').message).toBe('The model server rejected the request.');
    expect(rejected(400, '<html><body>no title</body></html>').message).toBe('The model server rejected the request.');
    expect(rejected(400, '').message).toBe('The model server rejected the request.');
  });

  it.each([
    ['TGI 422', 422, '{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`","error_type":"validation"}'],
    ['TGI input alone', 422, '{"error":"Input validation error: `inputs` must have less than 4096 tokens. Given: 5000","error_type":"validation"}'],
    ['vLLM maximum model length', 400, '{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096."}}'],
    ['llama.cpp context size', 400, '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}'],
    ['a 413 overflow in plain text', 413, "This model's maximum context length is 4096 tokens"],
  ])('recognizes a context overflow: %s (it was only seen on a 400 in OpenAI\'s shape)', (_server, status, body) => {
    const e = rejected(status, body);
    expect({ code: e.code, status: e.status, param: e.param }).toEqual({ code: 'context_length_exceeded', status: 400, param: 'max_tokens' });
  });

  it("tells Ollama's missing model (an error string on a 404) from a wrong base URL", () => {
    expect(rejected(404, `{"error":"model 'llama3' not found, try pulling it first"}`).message).toMatch(/does not serve this endpoint's configured model/);
    expect(rejected(404, '404 page not found').message).toMatch(/no such route/);
  });

  it("never shows a 5xx's body: the server's internals are the operator's", () => {
    expect(rejected(500, 'Traceback (most recent call last): File "/srv/app.py"').message).toBe('The model server failed (HTTP 500 from upstream).');
  });
});

describe('every other 4xx is the request\'s own', () => {
  it.each([409, 410, 413, 415])('maps HTTP %i to 400 invalid_request with the server\'s message, not retryable (it was a retryable 500)', (status) => {
    const e = mapUpstreamError(status, '{"error":{"message":"Request too large"}}', 5);
    expect({ status: e.status, code: e.code, retryable: e.retryable }).toEqual({ status: 400, code: 'invalid_request', retryable: false });
    expect(e.message).toBe('The model server rejected the request: Request too large');
  });

  it('keeps 401/403/404 the operator\'s 500s and 408 a timeout', () => {
    expect([401, 403, 404].map((s) => mapUpstreamError(s, '{"error":"x"}', null)).map((e) => [e.code, e.retryable])).toEqual([
      ['internal_error', false],
      ['internal_error', false],
      ['internal_error', false],
    ]);
    expect(mapUpstreamError(408, '', null).code).toBe('timeout');
  });
});

describe("the model server's retry hint", () => {
  const NOW = Date.parse('2026-03-01T12:00:00Z');
  const hint = (retryAfter: string | null, retryAfterMs: string | null = null) => retryAfterSeconds({ retryAfter, retryAfterMs }, NOW);

  it('reads retry-after-ms first, rounded up to whole seconds (it was ignored: 2500 ms gave 1 s)', () => {
    expect(hint(new Date(NOW + 60_000).toUTCString(), '2500')).toBe(3);
    expect(hint(null, '100')).toBe(1);
  });

  it('reads an HTTP-date as the seconds from now, at least 1 (it gave the default 1 s)', () => {
    expect(hint(new Date(NOW + 30_000).toUTCString())).toBe(30);
    expect(hint(new Date(NOW - 5_000).toUTCString())).toBe(1);
  });

  it('reads delta-seconds, at least 1 and at most a day; nothing readable is no hint', () => {
    expect([hint('7'), hint('0'), hint('999999999')]).toEqual([7, 1, 86_400]);
    expect([hint(null), hint('soon'), hint(null, 'x')]).toEqual([null, null, null]);
  });

  it('passes a 5xx hint on: Retry-After on a 503, still 500 internal_error and retryable (it was dropped)', () => {
    const e = mapUpstreamError(503, '{"error":"server busy"}', 3);
    expect({ status: e.status, code: e.code, retryable: e.retryable, headers: e.headers }).toEqual({ status: 500, code: 'internal_error', retryable: true, headers: { 'Retry-After': '3' } });
    expect(e.extra).toBeUndefined();
    expect(mapUpstreamError(503, '', null).headers).toBeUndefined();
    expect(mapUpstreamError(401, '', 3).headers).toBeUndefined();
  });
});

describe('mapReportedError (an error inside an HTTP 200 answer)', () => {
  it("maps vLLM's numeric code as the HTTP status it stands for, keeping the server's message", () => {
    const e = mapReportedError({ object: 'error', message: 'vllm stream err', type: 'BadRequestError', code: 400 });
    expect({ status: e.status, code: e.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(e.message).toMatch(/rejected the request: vllm stream err/);
  });

  it("is a server failure without a status, 500 internal_error with the server's message", () => {
    const e = mapReportedError({ message: 'model overloaded', type: 'server_error', code: 'overloaded' });
    expect({ status: e.status, code: e.code }).toEqual({ status: 500, code: 'internal_error' });
    expect(e.message).toBe('The model server reported an error: model overloaded');
    expect(mapReportedError({ message: 'busy', code: 503 }).message).toBe('The model server reported an error (code 503): busy');
  });

  it('keeps recognized conditions: a context overflow, a 429', () => {
    expect(mapReportedError({ message: "This model's maximum context length is 8192 tokens", code: 400 }).code).toBe('context_length_exceeded');
    expect(mapReportedError({ message: 'slow down', code: 429 }).code).toBe('capacity_exceeded');
  });
});

describe('failedCompletion (an HTTP 200 chat answer)', () => {
  it('is null for a completion', () => {
    expect(failedCompletion({ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }] })).toBeNull();
  });

  it("is the server's error when the body is one, its message kept", () => {
    const e = failedCompletion({ error: { message: 'model overloaded', type: 'server_error', code: 'overloaded' } });
    expect({ status: e?.status, code: e?.code, message: e?.message }).toEqual({ status: 500, code: 'internal_error', message: 'The model server reported an error: model overloaded' });
    expect(failedCompletion({ object: 'error', message: 'bad', type: 'BadRequestError', code: 400 })?.code).toBe('invalid_request');
  });

  it('is 500 internal_error naming the missing choices when the body is neither', () => {
    for (const body of [{ id: 'x', object: 'chat.completion' }, [], 'text', null]) {
      const e = failedCompletion(body);
      expect(e?.code).toBe('internal_error');
      expect(e?.message).toMatch(/not a chat completion: it has no choices array/);
    }
  });
});

describe('transport failures', () => {
  it('retries only the errors that opening a connection raises', () => {
    expect(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT'].map((c) => sentNothing(errno(c)))).toEqual([true, true, true, true]);
    expect(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'EHOSTUNREACH', 'UND_ERR_ABORTED'].map((c) => sentNothing(errno(c)))).toEqual([false, false, false, false, false]);
    expect(sentNothing(new Error('no code'))).toBe(false);
  });

  it('names the cause the way an operator greps for it', () => {
    expect(causeOf(errno('ECONNREFUSED', { address: '127.0.0.1', port: 19102 }), 'http://127.0.0.1:19102')).toBe('ECONNREFUSED 127.0.0.1:19102');
    expect(causeOf(errno('ENOTFOUND', { hostname: 'models.internal' }), 'http://models.internal')).toBe('ENOTFOUND models.internal');
    const aggregate = Object.assign(new AggregateError([errno('ECONNREFUSED', { address: '::1', port: 9 })]), { code: 'ECONNREFUSED' });
    expect(causeOf(aggregate, 'http://localhost:9')).toBe('ECONNREFUSED ::1:9');
    expect(causeOf(errno('UND_ERR_SOCKET'), 'http://h:1')).toBe('UND_ERR_SOCKET http://h:1 (UND_ERR_SOCKET happened)');
  });

  it('gives the client a 500 internal_error that says what failed, never the address', () => {
    const refused = unreachableUpstream(transportFailure(errno('ECONNREFUSED')));
    expect({ status: refused.status, code: refused.code }).toEqual({ status: 500, code: 'internal_error' });
    expect(refused.message).toMatch(/could not be reached \(connection refused\)/);
    expect(unreachableUpstream(transportFailure(errno('ENOTFOUND'))).message).toMatch(/host name does not resolve/);
    expect(noServerAvailable(2).message).toMatch(/all 2 of its servers are out/);
  });
});
