/**
 * The Redis admission port when Redis does not answer (coordination.on_outage; docs/decisions.md "Shared
 * limits in Redis"): the gateway still starts (after a bounded wait), fail_open limits on this replica
 * alone (at its share of each ceiling: the ceiling over the live replicas), fail_closed answers 503
 * limits_unavailable, a command slower than command_timeout_ms on a connection that is up refuses that
 * request (it may still be counted) without an outage, only a Redis that answers nothing for the stall
 * bound is down, and each transition is logged once, down and back.
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AdmissionPort } from '../../src/core/coordination/admission-port.js';
import { DEFAULT_LIMIT_POLICY, type Admission } from '../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../src/core/records.js';
import { createRedisCoordination, type RedisCoordination } from '../../src/coordination/redis/index.js';
import { START_WAIT_MS } from '../../src/coordination/redis/redis-coordination.js';
import { GatewayError } from '../../src/errors.js';
import { freshPrefix, REDIS_URL, requireRedis } from './redis-required.js';
import { closedPort, startRedisProxy, type RedisProxy } from './redis-proxy.js';

const T0 = 1_700_000_000_000;
const project: ProjectRecord = { id: `proj_outage_${process.pid}`, uuid: 'u', slug: 'o', name: 'O', plan: 'paid', requestsPerMinute: 7, tokensPerMinute: 0, defaultWorkspaceId: null, createdAt: 0 };
const key: ApiKeyRecord = {
  id: 'key_outage', projectId: project.id, name: null, prefix: 'svc_o_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
  expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
};

interface LogLine {
  level: number;
  msg: string;
  cause?: string;
}

let opened: RedisCoordination[] = [];
let proxies: RedisProxy[] = [];

async function coordination(url: string, onOutage: 'fail_open' | 'fail_closed', lines: LogLine[] = [], commandTimeoutMs = 250, keyPrefix = freshPrefix()): Promise<RedisCoordination> {
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  const c = await createRedisCoordination({ url, keyPrefix, onOutage, commandTimeoutMs, policy: DEFAULT_LIMIT_POLICY, logger });
  opened.push(c);
  return c;
}

async function admitOrError(port: AdmissionPort, now = T0): Promise<Admission | unknown> {
  try {
    return await port.admit(project, key, 'inference', now);
  } catch (err) {
    return err;
  }
}

async function within(ms: number, check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const warnings = (lines: LogLine[]): LogLine[] => lines.filter((l) => l.level === 40 && l.msg.startsWith('shared rate limits'));
const recoveries = (lines: LogLine[]): LogLine[] => lines.filter((l) => l.level === 30 && l.msg.startsWith('shared rate limits: Redis answers'));

beforeAll(requireRedis);

afterEach(async () => {
  await Promise.all(opened.map((c) => c.close()));
  await Promise.all(proxies.map((p) => p.stop()));
  opened = [];
  proxies = [];
});

describe('Redis admission during an outage', () => {
  it('starts after a bounded wait when Redis is unreachable, and fail_open limits on this replica alone, at its share of the ceiling', async () => {
    const started = Date.now();
    const c = await coordination(`redis://127.0.0.1:${await closedPort()}`, 'fail_open');
    expect(Date.now() - started).toBeLessThan(START_WAIT_MS + 2000);
    expect(c.admission.health?.()).toMatchObject({ name: 'redis', ok: false });
    let admitted = 0;
    for (let i = 0; i < 15; i++) if (((await admitOrError(c.admission)) as Admission).refusal === null) admitted += 1;
    // base 7 + burst: a ceiling of 10, counted in this process.
    expect(admitted).toBe(10);

    // Three live replicas (issue 32): each admits its share, 3 of the 10, never the whole ceiling.
    c.countReplicasWith(() => 3);
    admitted = 0;
    for (let i = 0; i < 15; i++) if (((await admitOrError(c.admission, T0 + 120_000)) as Admission).refusal === null) admitted += 1;
    expect(admitted).toBe(3);
    expect(c.admission.health?.().detail).toMatch(/at 1\/3 of each \(3 live replicas\)/);
  });

  it('answers 503 limits_unavailable under fail_closed while Redis is unreachable', async () => {
    const c = await coordination(`redis://127.0.0.1:${await closedPort()}`, 'fail_closed');
    const err = await admitOrError(c.admission);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('limits_unavailable');
    expect((err as GatewayError).status).toBe(503);
    expect((err as GatewayError).message).toMatch(/shared rate limiter is unreachable/);
    // A request nothing limits needs no Redis and is never refused for its absence.
    expect(await c.admission.admit({ ...project, requestsPerMinute: 0 }, key, 'inference', T0)).toEqual({ view: null, refusal: null });
  });

  it('falls back when Redis drops, logs the transition once each way, and shares the counters again once it is back', async () => {
    const proxy = await startRedisProxy();
    proxies.push(proxy);
    const lines: LogLine[] = [];
    const c = await coordination(proxy.url, 'fail_open', lines);
    expect(c.admission.health?.()).toMatchObject({ name: 'redis', ok: true });
    expect(((await admitOrError(c.admission)) as Admission).view).toEqual({ limit: 10, remaining: 9, resetSeconds: 60 });

    await proxy.stop();
    for (let i = 0; i < 5; i++) expect(((await admitOrError(c.admission)) as Admission).refusal).toBeNull();
    expect(c.admission.health?.()).toMatchObject({ name: 'redis', ok: false });
    expect(warnings(lines)).toHaveLength(1);

    await proxy.start();
    await within(5000, () => c.admission.health?.().ok === true);
    expect(recoveries(lines)).toHaveLength(1);
    expect(warnings(lines)).toHaveLength(1);
    // Redis still holds the one request admitted before the outage; the local ones stayed local.
    expect(((await admitOrError(c.admission, T0 + 1)) as Admission).view).toEqual({ limit: 10, remaining: 8, resetSeconds: 60 });
  });

  it('refuses a request whose command outlives command_timeout_ms on a live connection, without an outage and without admitting it locally', async () => {
    const proxy = await startRedisProxy();
    proxies.push(proxy);
    const lines: LogLine[] = [];
    const prefix = freshPrefix();
    const c = await coordination(proxy.url, 'fail_open', lines, 100, prefix);
    expect(((await admitOrError(c.admission)) as Admission).refusal).toBeNull();
    proxy.delayMs = 400;
    const err = await admitOrError(c.admission, T0 + 1);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('limits_unavailable');
    expect((err as GatewayError).message).toMatch(/did not answer within 100 ms and may have counted this request/);
    // Slow is not down: no outage logged, /readyz still ok (before issue 32 this request was admitted on a local ceiling).
    expect(c.admission.health?.()).toMatchObject({ name: 'redis', ok: true });
    expect(warnings(lines)).toHaveLength(0);
    // The late script ran: the refused request is counted in Redis, the safe side.
    const reader = new Redis(REDIS_URL);
    try {
      const counter = `${prefix}{${project.id}}:req:inference`;
      const started = Date.now();
      while ((await reader.hget(counter, 'n')) !== '2') {
        if (Date.now() - started > 5000) throw new Error('the late admission never reached Redis');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      reader.disconnect();
    }
    proxy.delayMs = 0;
    // The PING sent at the timeout goes through first (a TCP stream keeps its order).
    await within(5000, () => proxy.held() === 0);
    const after = await admitOrError(c.admission, T0 + 2);
    expect((after as Admission).view).toEqual({ limit: 10, remaining: 7, resetSeconds: 60 });
    expect(warnings(lines)).toHaveLength(0);
  });

  it('keeps a Redis that answers every command late (past the timeout) for longer than the stall bound as slow, never down', async () => {
    const proxy = await startRedisProxy();
    proxies.push(proxy);
    const lines: LogLine[] = [];
    const c = await coordination(proxy.url, 'fail_open', lines, 100);
    expect(((await admitOrError(c.admission)) as Admission).refusal).toBeNull();
    // Each command (and the PING sent at the first timeout) is answered 150 ms after it was sent: too late
    // for its own 100 ms timeout, but Redis is alive. Before issue 32's fix this read as a stall after 2 s.
    proxy.delayMs = 150;
    const started = Date.now();
    let refused = 0;
    while (Date.now() - started < 3000) {
      const err = await admitOrError(c.admission, T0 + 1);
      expect((err as GatewayError).message).toMatch(/did not answer within 100 ms/);
      refused += 1;
    }
    expect(refused).toBeGreaterThan(10);
    expect(c.admission.health?.()).toMatchObject({ name: 'redis', ok: true });
    expect(warnings(lines)).toHaveLength(0);
  });

  it('treats Redis as down once nothing has answered for the stall bound, under fail_closed too', async () => {
    const proxy = await startRedisProxy();
    proxies.push(proxy);
    const lines: LogLine[] = [];
    const c = await coordination(proxy.url, 'fail_closed', lines, 100);
    expect(((await admitOrError(c.admission)) as Admission).refusal).toBeNull();
    proxy.delayMs = 5000;
    const started = Date.now();
    // Every admission is refused (each may be counted); the stall bound (2 s at a 100 ms timeout) then marks Redis down.
    while (c.admission.health?.().ok !== false) {
      expect(((await admitOrError(c.admission, T0 + 1)) as GatewayError).message).toMatch(/did not answer within 100 ms/);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(warnings(lines)[0]?.cause).toMatch(/no answer for \d+ ms \(commands time out after 100 ms\)/);
    // Down: fail_closed refuses at once, without sending anything.
    expect(((await admitOrError(c.admission, T0 + 2)) as GatewayError).message).toMatch(/shared rate limiter is unreachable/);
    proxy.delayMs = 0;
    await proxy.stop();
    await proxy.start();
    await within(5000, () => c.admission.health?.().ok === true);
    expect(((await admitOrError(c.admission, T0 + 3)) as Admission).refusal).toBeNull();
  });
});
