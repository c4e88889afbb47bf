import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { FREE_TIER_TIMEOUTS, PROJECT, testConfig } from '../helpers/configs.js';
import { startGatewayProcess } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call, errorOf, expectError } from '../helpers/http.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { simSeq, waitForSim } from '../helpers/simulator-log.js';
import { openUsageDb } from '../helpers/usage-db.js';

/** `bytes` cut at `cutAt`, each piece its own write 15 ms apart (its own read at the gateway), then the end. */
function writeInPieces(res: ServerResponse, bytes: Buffer, cutAt: readonly number[]): void {
  const pieces = [...cutAt, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : cutAt[i - 1], end));
  const next = (): void => {
    const piece = pieces.shift();
    if (piece === undefined) return void res.end();
    res.write(piece);
    setTimeout(next, 15);
  };
  next();
}

const suite = useGatewaySuite();

const url = (slug: string): string => `${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`;
const ask = (extra: Record<string, unknown> = {}) => ({ model: 'client-model', messages: [{ role: 'user', content: 'stream please' }], stream: true, ...extra });

describe('SSE passthrough', () => {
  it('streams chunks with our id, the echoed model and service_tier on every chunk, then [DONE]', async () => {
    const res = await call(url('chat'), { key: suite.keys.full, body: ask({ service_tier: 'flex' }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const frames = parseSse(String(res.body));
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const chunks = chunksOf(frames);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c).toMatchObject({ id: res.headers.get('x-request-id'), object: 'chat.completion.chunk', model: 'client-model', service_tier: 'flex' });
      expect(c).not.toHaveProperty('system_fingerprint');
      expect(c).not.toHaveProperty('usage');
    }
  });

  it('ends with a usage chunk carrying every detail field when include_usage is set', async () => {
    const res = await call(url('chat'), { key: suite.keys.full, body: ask({ stream_options: { include_usage: true } }) });
    const last = chunksOf(parseSse(String(res.body))).at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.service_tier).toBe('default');
    expect(last?.usage).toMatchObject({
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: null },
      completion_tokens_details: { reasoning_tokens: null, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
    });
  });

  it('turns a mid-stream upstream failure into an error data frame followed by [DONE]', async () => {
    const res = await call(url('chat'), { key: suite.keys.full, body: ask({ sim: { fail_after: 2 } }) });
    const frames = parseSse(String(res.body));
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const error = JSON.parse(frames.at(-2)?.data ?? '{}') as { error: Record<string, unknown> };
    expect(error.error).toMatchObject({ code: 'internal_error', type: 'server_error', param: null });
  });

  it('aborts the upstream request at once when the client disconnects', async () => {
    const controller = new AbortController();
    const before = await simSeq(suite.sim.url);
    const res = await fetch(url('chat'), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask({ sim: { tokens: 200, delay_ms: 50 } })),
      signal: controller.signal,
    });
    const reader = res.body?.getReader();
    await reader?.read();
    controller.abort();
    const seen = await waitForSim(suite.sim.url, (r) => r.seq > before && r.aborted);
    expect(seen.completed).toBe(false);
  });
});

// Regression: a model server that streams usage unasked (vLLM's --enable-force-include-usage, or its
// continuous usage stats) had it reach clients that sent no stream_options.include_usage.
describe('usage a model server streams unasked', () => {
  const frame = (extra: string): string => `data: {"id":"up","object":"chat.completion.chunk","created":1,"model":"up"${extra}}\n\n`;
  const usage = '"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}';
  const chatty = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      frame(',"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null') +
        frame(`,"choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}],${usage}`) +
        frame(',"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null') +
        frame(`,"choices":[],${usage}`) +
        'data: [DONE]\n\n',
    );
  });

  it('leaves usage out of every chunk unless include_usage is set, and still bills the reported usage', async () => {
    await new Promise<void>((resolve) => chatty.listen(0, '127.0.0.1', resolve));
    const g = await startGatewayProcess(testConfig(`http://127.0.0.1:${(chatty.address() as AddressInfo).port}/v1`, suite.keys));
    const ledger = openUsageDb(g.dbPath);
    try {
      const plain = await call(`${g.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: ask() });
      const frames = parseSse(String(plain.body));
      expect(frames.at(-1)?.data).toBe('[DONE]');
      const chunks = chunksOf(frames);
      expect(chunks.map((c) => (c.choices as { delta: unknown }[]).map((ch) => ch.delta))).toEqual([[{ role: 'assistant', content: '' }], [{ content: 'hi' }], [{}]]);
      for (const c of chunks) expect(c).not.toHaveProperty('usage');
      const row = await ledger.waitForRow(plain.headers.get('x-request-id') ?? '');
      expect(row).toMatchObject({ prompt_tokens: 7, completion_tokens: 2, usage_source: 'upstream' });

      const asked = await call(`${g.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: ask({ stream_options: { include_usage: true } }) });
      expect(chunksOf(parseSse(String(asked.body))).at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, total_tokens: 9 } });
    } finally {
      ledger.close();
      await g.stop();
      chatty.closeAllConnections();
      await new Promise<void>((resolve) => chatty.close(() => resolve()));
    }
  });
});

// The streamed turn decodes each read on its own when it ends on a character boundary, keeps an event cut
// between reads, switches to the UTF-8 decoder for good once a read ends inside a character, and searches
// for CRLF ends only once a read holds a CR (issue 35's per-read shortcuts). The answer must be the same
// however the model server's bytes are cut.
describe('a model server whose stream arrives cut anywhere', () => {
  const head = '{"id":"up-1","object":"chat.completion.chunk","created":1700000000,"model":"up","system_fingerprint":"fp","choices":[';
  const choice = (delta: string, finish = 'null'): string => `{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}`;
  const stream =
    `data: ${head}${choice('{"role":"assistant","content":""}')}]}\n\n` +
    `data: ${head}${choice('{"content":"caf\u00e9 \u65e5\u672c\u8a9e "}')}]}\n\n` +
    `data: ${head}${choice('{"reasoning_content":"hmm"}')}]}\n\n` +
    `data: ${head}${choice('{"content":"\\"quoted\\" \ud83d\ude00"}')}]}\n\n` +
    `data: ${head}${choice('{"content":"crlf"}')}]}\r\n\r\n` +
    `data: ${head}${choice('{}', '"stop"')}],"usage":null}\n\n` +
    `data: ${head}],"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11}}\n\n` +
    'data: [DONE]\n\n';
  const bytes = Buffer.from(stream);
  const eventStarts: number[] = [];
  for (let at = bytes.indexOf('data: '); at !== -1; at = bytes.indexOf('data: ', at + 1)) eventStarts.push(at);
  const cuts: number[][] = [
    // One read: the whole stream.
    [],
    // At every event's end: each its own read.
    eventStarts.slice(1),
    // Anywhere: inside multi-byte characters, inside `data: `, inside the CRLF event's end.
    [bytes.indexOf('\u65e5') + 1, bytes.indexOf('\u672c') + 2, Number(eventStarts[3]) + 3, bytes.indexOf('\r\n\r\n') + 1],
  ];
  let served = 0;
  const model = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    writeInPieces(res, bytes, cuts[served++] ?? []);
  });

  it('answers byte for byte the same as when the stream came in one read', async () => {
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    const g = await startGatewayProcess(testConfig(`http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, suite.keys));
    try {
      const answer = async (): Promise<string> => {
        const res = await fetch(`${g.url}/${PROJECT}/chat/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
          body: JSON.stringify(ask({ stream_options: { include_usage: true } })),
        });
        expect(res.status).toBe(200);
        return (await res.text()).replaceAll(res.headers.get('x-request-id') ?? '-', 'REQUEST-ID');
      };
      const whole = await answer();
      expect(await answer()).toBe(whole);
      expect(await answer()).toBe(whole);
      const chunks = chunksOf(parseSse(whole));
      const text = chunks.map((c) => (c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '').join('');
      expect(text).toBe('caf\u00e9 \u65e5\u672c\u8a9e "quoted" \ud83d\ude00crlf');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 4 } });
      for (const c of chunks) expect(c).toMatchObject({ id: 'REQUEST-ID', model: 'client-model', created: 1700000000 });
      expect(served).toBe(3);
    } finally {
      await g.stop();
      model.closeAllConnections();
      await new Promise<void>((resolve) => model.close(() => resolve()));
    }
  });
});

describe('a model server that ends SSE lines with a bare CR (a legal terminator, WHATWG SSE)', () => {
  // Was: `data: {...}\r\r` events were never found: every content chunk dropped, then an internal_error
  // frame; in a mixed stream the CR-terminated chunk vanished.
  const head = '{"id":"up-1","object":"chat.completion.chunk","created":1700000000,"model":"up","system_fingerprint":"fp","choices":[';
  const choice = (delta: string, finish = 'null'): string => `{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}`;
  const events = [
    `data: ${head}${choice('{"role":"assistant","content":""}')}]}`,
    `data: ${head}${choice('{"content":"one "}')}]}`,
    `data: ${head}${choice('{"content":"two "}')}]}`,
    `data: ${head}${choice('{"content":"three"}')}]}`,
    `data: ${head}${choice('{}', '"stop"')}],"usage":null}`,
    `data: ${head}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`,
    'data: [DONE]',
  ];
  const cr = events.map((e) => `${e}\r\r`).join('');
  const ends = ['\n\n', '\r\r', '\r\n\r\n', '\r\n\n', '\n\r\n', '\r\r\n', '\r: comment\r\r'];
  const mixed = events.map((e, i) => `${e}${ends[i % ends.length]}`).join('');
  // [body, where the writes are cut]: whole; CR-only cut after each event's first CR (a CR that ends a
  // read, the next read starting with CR); mixed cut between the CR and LF of every CRLF.
  const variants: [string, number[]][] = [
    [cr, []],
    [cr, [...cr.matchAll(/\r\r/g)].map((m) => m.index + 1)],
    [mixed, []],
    [mixed, [...mixed.matchAll(/\r\n/g)].map((m) => m.index + 1)],
  ];
  let served = 0;
  const model = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const [body, cutAt] = variants[served++] ?? ['', []];
    writeInPieces(res, Buffer.from(body), cutAt);
  });

  it('reads every event of CR-only and mixed-terminator streams, however the reads are cut', async () => {
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    const g = await startGatewayProcess(testConfig(`http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, suite.keys));
    try {
      for (let i = 0; i < variants.length; i++) {
        const res = await fetch(`${g.url}/${PROJECT}/chat/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
          body: JSON.stringify(ask({ stream_options: { include_usage: true } })),
        });
        expect(res.status).toBe(200);
        const frames = parseSse(await res.text());
        expect(frames.some((f) => f.data.includes('"error"')), `variant ${i}`).toBe(false);
        const chunks = chunksOf(frames);
        const text = chunks.map((c) => (c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '').join('');
        expect(text, `variant ${i}`).toBe('one two three');
        expect(chunks.at(-1), `variant ${i}`).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } });
      }
      expect(served).toBe(variants.length);
    } finally {
      await g.stop();
      model.closeAllConnections();
      await new Promise<void>((resolve) => model.close(() => resolve()));
    }
  });
});

describe('tier deadlines (free tier shortened by the test config)', () => {
  it('answers 408 timeout when a non-streaming turn overruns the request deadline', async () => {
    const res = await call(url('slow'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], sim: { first_token_delay_ms: FREE_TIER_TIMEOUTS.request_ms + 2000 } } });
    expectError(res, 408, 'timeout');
    expect((res.body as { error: { type: string } }).error.type).toBe('timeout');
  });

  it('sends an SSE error event with type timeout_error when a stream goes idle', async () => {
    const res = await call(url('slow'), { key: suite.keys.full, body: ask({ sim: { tokens: 3, delay_ms: FREE_TIER_TIMEOUTS.idle_ms + 400 } }) });
    const frames = parseSse(String(res.body));
    const error = frames.find((f) => f.event === 'error');
    expect(JSON.parse(error?.data ?? '{}')).toMatchObject({ error: { type: 'timeout_error', message: expect.any(String) } });
  });

  // Regression: a stream whose model server had sent nothing by the deadline was answered 408 JSON.
  it('sends the SSE error event, not a 408, when a streamed turn overruns before the model server answers at all', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const g = await startGatewayProcess(testConfig(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, suite.keys));
    try {
      const res = await call(`${g.url}/${PROJECT}/slow/v1/chat/completions`, { key: suite.keys.full, body: ask() });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      const frames = parseSse(String(res.body));
      expect(frames.map((f) => f.event)).toEqual(['error']);
      expect(JSON.parse(frames[0]?.data ?? '{}')).toMatchObject({ error: { type: 'timeout_error', code: 'timeout', message: expect.any(String) } });
      const buffered = await call(`${g.url}/${PROJECT}/slow/v1/chat/completions`, { key: suite.keys.full, body: ask({ stream: false }) });
      expectError(buffered, 408, 'timeout');
    } finally {
      await g.stop();
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('gives reasoning turns the full request deadline as idle timeout', async () => {
    // A silent pause longer than the idle timeout but inside the request deadline.
    const pause = { tokens: 1, reasoning_tokens: 0, first_token_delay_ms: FREE_TIER_TIMEOUTS.idle_ms + 300 };
    const body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }], sim: pause };
    const plain = await call(url('slow'), { key: suite.keys.full, body });
    expect(parseSse(String(plain.body)).some((f) => f.event === 'error')).toBe(true);
    // The same effort asked three ways (SPEC: reasoning.effort takes "same values and mapping"; enabled alone is medium).
    for (const asked of [{ reasoning_effort: 'low' }, { reasoning: { effort: 'low' } }, { reasoning: { enabled: true } }]) {
      const reasoning = await call(url('slow'), { key: suite.keys.full, body: { ...body, ...asked } });
      const frames = parseSse(String(reasoning.body));
      expect(frames.some((f) => f.event === 'error'), JSON.stringify(asked)).toBe(false);
      expect(frames.at(-1)?.data).toBe('[DONE]');
    }
  });
});

describe('upstream failures', () => {
  it.each([
    [500, 500, 'internal_error'],
    [503, 500, 'internal_error'],
    [429, 429, 'capacity_exceeded'],
    [400, 400, 'invalid_request'],
  ])('maps an upstream %i to %i %s', async (upstreamStatus, status, code) => {
    const res = await call(url('chat'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], sim: { error_status: upstreamStatus } } });
    expectError(res, status, code);
  });

  // SPEC Errors: every 429, the model server's included, has retry_after and retry_strategy inside
  // `error` plus Retry-After; streamed or not, with or without the server's own Retry-After.
  it.each([
    [false, 7, 7],
    [true, 7, 7],
    [false, undefined, 1],
    [true, undefined, 1],
  ])('answers an upstream 429 (stream %s, Retry-After %s) with retry_after %i and a retry_strategy', async (stream, retryAfter, expected) => {
    const sim = { error_status: 429, ...(retryAfter === undefined ? {} : { retry_after: retryAfter }) };
    const res = await call(url('chat'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], stream, sim } });
    expect(res.status).toBe(429);
    const error = errorOf(res);
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'retry_after', 'retry_strategy', 'type']);
    expect(error).toMatchObject({ code: 'capacity_exceeded', retry_after: expected });
    expect(res.headers.get('retry-after')).toBe(String(expected));
    expect(error.retry_strategy).toEqual({ type: 'exponential', initial_delay_ms: expected * 1000, max_delay_ms: 60_000, multiplier: 2, jitter: true });
  });

  it('maps an upstream context overflow to context_length_exceeded on max_tokens', async () => {
    const res = await call(url('chat'), { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], sim: { error_status: 400, error_code: 'context_length_exceeded' } } });
    expectError(res, 400, 'context_length_exceeded', 'max_tokens');
  });

  it('answers 500 internal_error when the upstream cannot be reached', async () => {
    const down = await startGatewayProcess(testConfig('http://127.0.0.1:9/v1', suite.keys));
    try {
      expectError(await call(`${down.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }] } }), 500, 'internal_error');
    } finally {
      await down.stop();
    }
  });
});

describe('shutdown', () => {
  it('lets an in-flight request finish on SIGTERM, then exits 0', async () => {
    const g = await startGatewayProcess(testConfig(suite.sim.url, suite.keys));
    // Only a request the simulator sees after this point: the idle-timeout test above left an unfinished
    // `"delay_ms":1000` request in its log, which a bare substring match took for this one, so SIGTERM
    // went out before this request reached the gateway (a 503, or a reset once the app closed).
    const before = await simSeq(suite.sim.url);
    const pending = call(`${g.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }], sim: { tokens: 5, delay_ms: 100 } } });
    await waitForSim(suite.sim.url, (r) => r.seq > before && r.body.includes('"delay_ms":100}') && !r.completed);
    const exited = g.stop('SIGTERM');
    const res = await pending;
    expect(res.status).toBe(200);
    // Answered while draining: the connection ends after the response, never cut before it is read.
    expect(res.headers.get('connection')).toBe('close');
    expect(await exited).toBe(0);
  });
});
