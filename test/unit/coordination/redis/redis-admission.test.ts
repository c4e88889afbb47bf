/**
 * RedisAdmission's verdict on a Redis that answers late (docs/deploy.md "Shared limits while Redis is slow
 * or down"): slow is refused and never admitted on the local shares, down is nothing answered at all since
 * a command went out. Found from outside (2 replicas, Redis behind a proxy adding 150 ms each way against
 * the 250 ms command timeout, a window already full): the idle 3 s between two bursts was read as "no
 * answer for 4176 ms", and one token charge that timed out marked Redis down at once; either way the
 * replicas then admitted their local shares on top of Redis's full window, twice the limit. The connection
 * is a fake (test/helpers/slow-redis-client.ts) on fake timers, so every round trip is exact.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LIMIT_POLICY, type Admission } from '../../../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../../../src/core/records.js';
import { RedisAdmission, type OutagePolicy } from '../../../../src/coordination/redis/redis-admission.js';
import { GatewayError } from '../../../../src/errors.js';
import { SlowRedisClient } from '../../../helpers/slow-redis-client.js';

const T0 = 1_700_000_000_000;
const TIMEOUT_MS = 250;
// base 20 + 50% burst: a ceiling of 30 a minute; 3,000 tokens a minute.
const project: ProjectRecord = { id: 'proj_slow', uuid: 'u', slug: 's', name: 'S', plan: 'paid', requestsPerMinute: 20, tokensPerMinute: 3000, defaultWorkspaceId: null, createdAt: 0 };
const key: ApiKeyRecord = {
  id: 'key_slow', projectId: project.id, name: null, prefix: 'svc_s_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
  expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
};

interface LogLine {
  level: number;
  msg: string;
  cause?: string;
}

let client: SlowRedisClient;
let lines: LogLine[];
let admission: RedisAdmission;

function open(onOutage: OutagePolicy = 'fail_open'): RedisAdmission {
  client = new SlowRedisClient(TIMEOUT_MS);
  lines = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  admission = new RedisAdmission({ redis: client as never, keyPrefix: 'p:', onOutage, policy: DEFAULT_LIMIT_POLICY, logger, commandTimeoutMs: TIMEOUT_MS });
  // The probe's two replicas: while down, each would admit 15 of the 30.
  admission.countReplicasWith(() => 2);
  return admission;
}

const outages = (): LogLine[] => lines.filter((l) => l.level === 40);

/** `n` admissions at once (a burst), settled on the fake timers: what each came to. */
type Answer = 'admitted' | 'refused' | 'unavailable';
async function burst(n: number, cls: 'inference' | 'management' = 'inference'): Promise<Answer[]> {
  const answers = Array.from({ length: n }, () =>
    // An admission while Redis is down answers (or throws) at once, without a Promise.
    new Promise<Admission>((resolve) => resolve(admission.admit(project, key, cls, Date.now()))).then(
      (a: Admission): Answer => (a.refusal === null ? 'admitted' : 'refused'),
      (err: unknown): Answer => {
        if (err instanceof GatewayError && err.code === 'limits_unavailable') return 'unavailable';
        throw err;
      },
    ),
  );
  await vi.advanceTimersByTimeAsync(TIMEOUT_MS + 100);
  return Promise.all(answers);
}

const tally = (answers: readonly string[], what: string): number => answers.filter((a) => a === what).length;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'], now: T0 });
});

afterEach(async () => {
  await admission.close();
  vi.useRealTimers();
});

describe('RedisAdmission on a slow Redis', () => {
  it('keeps a Redis that answers every command 300 ms late as slow across idle gaps between bursts, refusing instead of admitting local shares', async () => {
    open();
    expect(tally(await burst(30), 'admitted')).toBe(30);
    client.roundTripMs = 300;
    const answers: string[] = [];
    // Six bursts of 20, 3 s apart: between them nothing is asked, so nothing is unanswered.
    for (let i = 0; i < 6; i++) {
      answers.push(...(await burst(20)));
      await vi.advanceTimersByTimeAsync(3000 - TIMEOUT_MS - 100);
    }
    expect(tally(answers, 'admitted')).toBe(0);
    expect(tally(answers, 'unavailable')).toBe(120);
    expect(admission.health()).toMatchObject({ ok: true });
    expect(outages()).toEqual([]);
    // Redis refused every late script itself: its window holds the 30, no more.
    expect(client.counts.get(`p:{${project.id}}:req:inference`)).toBe(30);
  });

  it('treats a token charge that outlives the timeout as slow: no outage, and Redis counts it', async () => {
    open();
    expect(tally(await burst(1), 'admitted')).toBe(1);
    client.roundTripMs = 300;
    admission.chargeTokens(project.id, 2770, Date.now());
    await vi.advanceTimersByTimeAsync(400);
    expect(admission.health()).toMatchObject({ ok: true });
    expect(admission.health().detail).not.toMatch(/token charges counted locally/);
    expect(outages()).toEqual([]);
    expect(client.counts.get(`p:{${project.id}}:tokens`)).toBe(2770);
    // Redis answers in time again: the limits stay Redis's, with the late charge in them.
    client.roundTripMs = 0;
    expect(tally(await burst(10), 'admitted')).toBe(10);
  });

  it('declares Redis down only once nothing at all has answered for the stall bound since a command went out', async () => {
    open();
    expect(tally(await burst(1), 'admitted')).toBe(1);
    client.roundTripMs = null;
    // Requests every 350 ms: each times out, unanswered; the bound is max(2 s, 8 timeouts) = 2 s.
    let down = -1;
    for (let i = 0; i < 10 && down < 0; i++) {
      await burst(1);
      if (!admission.health().ok) down = i;
    }
    expect(down).toBe(5);
    expect(outages()[0]?.cause).toMatch(/^no answer for 2\d{3} ms \(commands time out after 250 ms\)$/);
    expect(tally(await burst(20), 'admitted')).toBe(15);
  });

  it('ends a stall outage at the first late reply: a Redis that answers is slow, and slow is refused, not shared out', async () => {
    open();
    client.roundTripMs = null;
    for (let i = 0; i < 7; i++) await burst(1);
    expect(admission.health()).toMatchObject({ ok: false });
    client.release(300);
    await vi.advanceTimersByTimeAsync(0);
    expect(admission.health()).toMatchObject({ ok: true });
    expect(lines.filter((l) => l.msg.startsWith('shared rate limits: Redis answers'))).toHaveLength(1);
    expect(tally(await burst(20), 'unavailable')).toBe(20);
  });

  it('still treats a dropped connection as down at once', async () => {
    open();
    client.drop();
    expect(admission.health()).toMatchObject({ ok: false, detail: expect.stringMatching(/connection closed/) });
    expect(tally(await burst(20), 'admitted')).toBe(15);
  });
});

// Found from outside: with Redis 400 ms away, DELETE /<project>/v1/management/api-keys/{id} answered 503
// limits_unavailable after 258 ms, so a leaked key could not be revoked (nor rotated) while Redis was slow.
describe('RedisAdmission for management requests when Redis cannot answer', () => {
  it.each(['fail_open', 'fail_closed'] as const)('counts them on this replica, at its share, while Redis is slow (%s)', async (onOutage) => {
    open(onOutage);
    client.roundTripMs = 400;
    const answers = await burst(40, 'management');
    // 60 a minute, 2 live replicas: this replica's share is 30; the rest are 429, still limited.
    expect([tally(answers, 'admitted'), tally(answers, 'refused'), tally(answers, 'unavailable')]).toEqual([30, 10, 0]);
    // Inference stays refused while slow: Redis may yet count it.
    expect(tally(await burst(5), 'unavailable')).toBe(5);
    expect(admission.health()).toMatchObject({ ok: true });
  });

  it('counts them on this replica, at its share, while Redis is down under fail_closed', async () => {
    open('fail_closed');
    client.drop();
    const answers = await burst(40, 'management');
    expect([tally(answers, 'admitted'), tally(answers, 'refused')]).toEqual([30, 10]);
    expect(tally(await burst(5), 'unavailable')).toBe(5);
  });

  it('still counts them in Redis while it answers in time', async () => {
    open('fail_closed');
    expect(tally(await burst(3, 'management'), 'admitted')).toBe(3);
    expect(client.counts.get(`p:{${project.id}}:req:management`)).toBe(3);
  });
});
