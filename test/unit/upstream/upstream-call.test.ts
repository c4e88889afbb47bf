/**
 * The one upstream call (upstream-call.ts) against real local HTTP servers: our deadline answers
 * `timeout`, the client's abort aborts the request without calling it a timeout, an error status becomes
 * the client's mapped error whether the answer is buffered or streamed, and a server that cannot be reached
 * is the client's error, logged once with its cause and request id and counted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { callUpstream, UpstreamDeadline, type AbortSource } from '../../../src/upstream/upstream-call.js';
import { createUpstreamClient, type UpstreamClient, type UpstreamEndpoint, type UpstreamErrorClass } from '../../../src/upstream/upstream-client.js';

interface Line {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

/** A client request stand-in: `onAbort` as IncomingRequest has it, and `abort()` to go away. */
class FakeClient implements AbortSource {
  #listeners: (() => void)[] = [];
  onAbort(listener: () => void): void {
    this.#listeners.push(listener);
  }
  abort(): void {
    for (const l of this.#listeners) l();
  }
}

let server: Server;
let base: string;
let refused: string;
/** Resolves when the server sees the connection of a `/hang` request close. */
let hangClosed: Promise<void>;
let onHangClosed: () => void = () => undefined;
const lines: Line[] = [];
const counted: UpstreamErrorClass[] = [];
let client: UpstreamClient;

function handle(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  const path = req.url ?? '';
  if (path.endsWith('/hang')) {
    res.on('close', () => onHangClosed());
    return;
  }
  if (path.endsWith('/busy')) {
    res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}');
    return;
  }
  if (path.endsWith('/too-long')) {
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"This model\'s maximum context length is 8192 tokens"}}');
    return;
  }
  if (path.endsWith('/huge')) {
    // A buffered answer past the 128 MiB cap (answer-cap.ts), written as fast as the client reads it.
    res.writeHead(200, { 'content-type': 'application/json' });
    const mib = Buffer.alloc(1024 * 1024, 0x20);
    let left = 129;
    const more = (): void => {
      while (left > 0 && !res.destroyed) {
        left -= 1;
        if (!res.write(mib)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    more();
    return;
  }
  if (path.endsWith('/down')) {
    res.writeHead(503).end('down for maintenance');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
}

function endpoint(url: string): UpstreamEndpoint {
  return {
    id: `e-${url}`,
    slug: 'chat',
    projectId: 'proj_t',
    upstream: { base_url: url, model: 'm', api_key_env: undefined, servers: [{ base_url: url, api_key_env: undefined, weight: 1 }], health: { failure_threshold: 3, cooldown_ms: 60_000 } },
  };
}

function call(path: string, signal: UpstreamDeadline) {
  return { path, body: Buffer.from('{"x":1}'), signal, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, requestId: 'req_call' };
}

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const spare = createServer();
  await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
  refused = `http://127.0.0.1:${(spare.address() as AddressInfo).port}/v1`;
  await new Promise<void>((r) => spare.close(() => r()));
  const at = (level: string) => (fields: object, msg: string) => void lines.push({ level, fields: fields as Record<string, unknown>, msg });
  client = createUpstreamClient({ env: {}, logger: { info: at('info'), warn: at('warn'), error: at('error') }, onUpstreamError: (_e, cause) => void counted.push(cause) });
});

afterAll(async () => {
  await client.close();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('callUpstream', () => {
  it('answers a status below 400 as it came, buffered or streamed, and notes the time to the answer', async () => {
    const log: { upstreamMs?: number } = {};
    const buffered = new UpstreamDeadline(5000, null, 'model', 'standard', log);
    const res = await callUpstream(client, endpoint(base), call('/ok', buffered), false);
    buffered.done();
    expect(res.statusCode).toBe(200);
    expect(res.body.toString('utf8')).toBe('{"ok":true}');
    expect(log.upstreamMs).toBeGreaterThanOrEqual(0);

    const streamed = new UpstreamDeadline(5000, null, 'model', 'standard', null);
    const sres = await callUpstream(client, endpoint(base), call('/ok', streamed), true);
    expect(await sres.body.text()).toBe('{"ok":true}');
    streamed.done();
  });

  it('throws timeout naming the tier and the deadline when our deadline fires first, and the server sees the request dropped', async () => {
    hangClosed = new Promise((r) => (onHangClosed = r));
    const deadline = new UpstreamDeadline(150, null, 'model', 'standard', null);
    const e = await rejection(callUpstream(client, endpoint(base), call('/hang', deadline), false));
    deadline.done();
    expect(e.code).toBe('timeout');
    expect(e.message).toBe("The model did not answer within the standard tier's 0.15 s deadline.");
    expect(deadline.timedOut).toBe(true);
    await hangClosed;
  });

  it('says seconds only when no tier is named (realtime segments)', async () => {
    const deadline = new UpstreamDeadline(100, null, 'transcription server', null, null);
    const e = await rejection(callUpstream(client, endpoint(base), call('/hang', deadline), true));
    expect(e.message).toBe('The transcription server did not answer within 0.1 s.');
  });

  it("aborts the upstream request when the client goes away, without calling it a timeout (the route bills it 'aborted')", async () => {
    hangClosed = new Promise((r) => (onHangClosed = r));
    const req = new FakeClient();
    const deadline = new UpstreamDeadline(5000, req, 'model', 'standard', null);
    const pending = callUpstream(client, endpoint(base), call('/hang', deadline), true);
    setTimeout(() => req.abort(), 50);
    const e = await rejection(pending);
    deadline.done();
    expect(deadline.aborted).toBe(true);
    expect(deadline.timedOut).toBe(false);
    expect(e.code).not.toBe('timeout');
    await hangClosed;
    // An abort is the client's doing: no operator line, no upstream error counted.
    expect(lines.filter((l) => l.fields.request_id === 'req_call' && l.msg.includes('unreachable'))).toEqual([]);
  });

  it('maps an error status onto the catalogue, keeping Retry-After, for buffered and streamed answers alike', async () => {
    for (const stream of [false, true]) {
      const busy = await rejection(callUpstream(client, endpoint(base), call('/busy', new UpstreamDeadline(5000, null, 'model', null, null)), stream));
      expect(busy.code).toBe('capacity_exceeded');
      expect(busy.headers).toEqual({ 'Retry-After': '7' });
      const long = await rejection(callUpstream(client, endpoint(base), call('/too-long', new UpstreamDeadline(5000, null, 'model', null, null)), stream));
      expect(long.code).toBe('context_length_exceeded');
      const down = await rejection(callUpstream(client, endpoint(base), call('/down', new UpstreamDeadline(5000, null, 'model', null, null)), stream));
      expect(down.code).toBe('internal_error');
      expect(down.message).toContain('HTTP 503 from upstream');
    }
  });

  it('notes the time to an error answer too', async () => {
    const log: { upstreamMs?: number } = {};
    await rejection(callUpstream(client, endpoint(base), call('/down', new UpstreamDeadline(5000, null, 'model', null, log)), false));
    expect(log.upstreamMs).toBeGreaterThanOrEqual(0);
  });

  it('answers a server it cannot reach with the client error, logged once with its cause and request id, and counted', async () => {
    const before = counted.length;
    const deadline = new UpstreamDeadline(5000, null, 'model', 'standard', null);
    const e = await rejection(callUpstream(client, endpoint(refused), call('/ok', deadline), false));
    deadline.done();
    expect(e.code).toBe('internal_error');
    expect(e.message).toContain('connection refused');
    const logged = lines.filter((l) => l.fields.request_id === 'req_call' && String(l.fields.cause).startsWith('ECONNREFUSED'));
    expect(logged).toHaveLength(1);
    expect(counted.slice(before)).toEqual(['unreachable']);
  });
});

describe('an answer past the cap', () => {
  it('fails the turn with the cap in the message, without counting or marking the server as unreachable', async () => {
    const before = counted.length;
    const failures = (): number[] | undefined => client.report().find((p) => p.endpoint_id === endpoint(base).id)?.servers.map((s) => s.consecutive_failures);
    const failuresBefore = failures();
    const deadline = new UpstreamDeadline(20_000, null, 'model', 'standard', null);
    const e = await rejection(callUpstream(client, endpoint(base), call('/huge', deadline), false));
    deadline.done();
    expect(e.code).toBe('internal_error');
    expect(e.message).toContain('exceeded 134217728 bytes');
    expect(counted.slice(before)).toEqual([]);
    expect(lines.filter((l) => l.msg === 'upstream answer refused')).toHaveLength(1);
    expect(client.healthy(endpoint(base).id)).toBe(true);
    expect(failures()).toEqual(failuresBefore);
  });
});

describe('UpstreamDeadline', () => {
  it('does not fire once done', () => {
    vi.useFakeTimers();
    try {
      const deadline = new UpstreamDeadline(20, null, 'model', null, null);
      deadline.done();
      vi.advanceTimersByTime(60);
      expect(deadline.timedOut).toBe(false);
      expect(deadline.aborted).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it("names a failed body read: timeout after the deadline, a GatewayError as it is, anything else unreachable", () => {
    const d = new UpstreamDeadline(5000, null, 'model server', 'flex', null);
    const own = new GatewayError('invalid_request');
    expect(d.failure(own)).toBe(own);
    expect(d.failure(new Error('socket')).message).toBe('The model server could not be reached.');
    d.timedOut = true;
    expect(d.failure(own).message).toBe("The model server did not answer within the flex tier's 5 s deadline.");
    d.done();
  });
});
