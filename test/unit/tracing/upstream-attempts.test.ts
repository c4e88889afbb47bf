/**
 * The upstream client's tracing seam against real local HTTP servers, with a recording trace in place of
 * the OpenTelemetry one: each attempt (the first, and the retry on another server of the pool) is its own
 * span, the request sent carries that attempt's traceparent, a streamed attempt ends when its body closes,
 * and a call without a trace sends no trace header at all.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpstreamClient, UpstreamAbort, type UpstreamEndpoint } from '../../../src/upstream/upstream-client.js';
import type { AttemptSpan, AttemptTarget, RequestTrace } from '../../../src/tracing/trace-port.js';

interface Recorded {
  readonly target: AttemptTarget;
  readonly attempt: number;
  readonly traceparent: string;
  readonly events: string[];
}

function recordingTrace(): { trace: RequestTrace; attempts: Recorded[] } {
  const attempts: Recorded[] = [];
  const trace: RequestTrace = {
    routing: () => ({ chose: () => undefined, end: () => undefined }),
    attempt(target, attempt): AttemptSpan {
      const rec: Recorded = { target, attempt, traceparent: `00-${'a'.repeat(32)}-${String(attempt).padStart(16, '0')}-01`, events: [] };
      attempts.push(rec);
      return {
        traceparent: rec.traceparent,
        tracestate: 'vendor=x',
        answered: (status) => void rec.events.push(`answered ${status}`),
        failed: (type) => void rec.events.push(`failed ${type}`),
        end: () => void rec.events.push('end'),
      };
    },
    end: () => undefined,
  };
  return { trace, attempts };
}

describe('upstream attempts as spans', () => {
  let server: Server;
  let live: string;
  let refused: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => res.end('{"ok":true}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    live = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    refused = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/v1`;
    await new Promise<void>((r) => closed.close(() => r()));
  });
  afterAll(() => {
    server.close();
  });

  const endpoint = (servers: string[]): UpstreamEndpoint => ({
    id: `e-${servers.join('|')}`,
    slug: 'chat',
    projectId: 'proj_t',
    upstream: { base_url: servers[0] ?? '', model: 'up-model', api_key_env: undefined, servers: servers.map((base_url) => ({ base_url, api_key_env: undefined, weight: 1 })), health: { failure_threshold: 3, cooldown_ms: 60_000 } },
  });
  const call = (trace: RequestTrace | null) => ({ path: '/chat/completions', body: Buffer.from('{}'), signal: new UpstreamAbort(), headersTimeoutMs: 5000, bodyTimeoutMs: 5000, trace });

  it('makes one span per attempt, and the retried request carries the second attempt’s traceparent', async () => {
    const client = createUpstreamClient({ now: () => 0 });
    const { trace, attempts } = recordingTrace();
    const res = await client.exchange(endpoint([refused, live]), call(trace));
    expect(res.statusCode).toBe(200);
    expect(attempts.map((a) => ({ attempt: a.attempt, origin: a.target.origin, events: a.events }))).toEqual([
      { attempt: 1, origin: new URL(refused).origin, events: ['failed unreachable'] },
      { attempt: 2, origin: new URL(live).origin, events: ['answered 200', 'end'] },
    ]);
    expect(attempts[0]?.target).toMatchObject({ projectId: 'proj_t', slug: 'chat', upstreamModel: 'up-model', path: '/chat/completions' });
    expect(seen.at(-1)).toMatchObject({ traceparent: attempts[1]?.traceparent, tracestate: 'vendor=x' });
    await client.close();
  });

  it('ends a streamed attempt when its body closes, not when its headers arrive', async () => {
    const client = createUpstreamClient({ now: () => 0 });
    const { trace, attempts } = recordingTrace();
    const res = await client.post(endpoint([live]), call(trace));
    expect(attempts[0]?.events).toEqual(['answered 200']);
    await res.body.text();
    await new Promise((r) => setImmediate(r));
    expect(attempts[0]?.events).toEqual(['answered 200', 'end']);
    await client.close();
  });

  it('sends no trace header for a call without a trace', async () => {
    const client = createUpstreamClient({ now: () => 0 });
    await client.exchange(endpoint([live]), call(null));
    expect(seen.at(-1)?.traceparent).toBeUndefined();
    expect(seen.at(-1)?.tracestate).toBeUndefined();
    await client.close();
  });
});
