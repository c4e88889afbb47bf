import { describe, expect, it } from 'vitest';
import { causeOf, failedCompletion, mapReportedError, mapUpstreamError, noServerAvailable, sentNothing, transportFailure, unreachableUpstream } from '../../../src/upstream/upstream-errors.js';

const errno = (code: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(`${code} happened`), { code, ...extra });

describe('mapUpstreamError', () => {
  it.each([
    [401, 500, 'internal_error', /refused the gateway's own credentials \(HTTP 401 from upstream\).*upstream API key/],
    [403, 500, 'internal_error', /refused the gateway's own credentials \(HTTP 403 from upstream\)/],
    [404, 500, 'internal_error', /no such route \(HTTP 404 from upstream\).*base URL is misconfigured/],
    [503, 500, 'internal_error', /overloaded or unavailable \(HTTP 503 from upstream\)/],
    [500, 500, 'internal_error', /failed \(HTTP 500 from upstream\)/],
    [429, 429, 'capacity_exceeded', /overloaded \(HTTP 429 from upstream\); retry after 7 s/],
    [504, 408, 'timeout', /timed out \(HTTP 504 from upstream\)/],
    [400, 400, 'invalid_request', /rejected the request/],
  ])('maps HTTP %i from upstream to %i %s with a message naming the cause', (upstream, status, code, message) => {
    const e = mapUpstreamError(upstream, '{"error":{"message":"nope"}}', '7');
    expect({ status: e.status, code: e.code }).toEqual({ status, code });
    expect(e.message).toMatch(message);
  });

  it('keeps the 429 retry hint in the header and the body', () => {
    const e = mapUpstreamError(429, '', '7');
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
