/**
 * What one admission costs through the Redis port (issue 12) against the in-process RateLimiter: 10,000
 * sequential admits each (one project, a key with a quota: both counters checked and consumed), plus a
 * bare PING round trip on the same kind of connection for scale. Sequential on purpose: the figure is
 * the latency a request waits, not Redis's throughput under pipelining. Three rounds, the median shown.
 *   npm run build && node dist/bench/redis-admission.js
 * Env: REDIS_URL (default redis://127.0.0.1:6379), ADMITS (default 10000).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { createRedisCoordination } from '../src/coordination/redis/index.js';
import { openRedis, closeRedis } from '../src/coordination/redis/redis-connection.js';
import type { AdmissionPort } from '../src/core/coordination/admission-port.js';
import { DEFAULT_LIMIT_POLICY, RateLimiter } from '../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../src/core/records.js';
import { median } from './limiter-cost.js';
import { runIfEntryPoint } from './targets.js';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ADMITS = Number(process.env.ADMITS ?? 10_000);
const ROUNDS = 3;
const T0 = 1_700_000_000_000;

const project: ProjectRecord = { id: 'proj_bench', uuid: 'u', slug: 'b', name: 'B', plan: 'paid', requestsPerMinute: 1_000_000, tokensPerMinute: 10_000_000, defaultWorkspaceId: null, createdAt: 0 };
const key: ApiKeyRecord = {
  id: 'key_bench', projectId: project.id, name: null, prefix: 'svc_b_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
  expiresAt: null, quotaRequests: 1_000_000, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
};

/** Microseconds per admission; time moves 1 ms per admit, so the ring advances as under real traffic. */
async function admitsUs(port: AdmissionPort, round: number): Promise<number> {
  const start = T0 + round * 3_600_000;
  const began = performance.now();
  for (let i = 0; i < ADMITS; i++) {
    const admission = await port.admit(project, key, 'inference', start + i);
    if (admission.refusal) throw new Error(`refused at ${i}`);
  }
  return ((performance.now() - began) * 1000) / ADMITS;
}

async function pingUs(): Promise<number> {
  const redis = openRedis(URL, { name: 'switchboard-bench', commandTimeoutMs: 1000, offlineQueue: true });
  await redis.ping();
  const began = performance.now();
  for (let i = 0; i < ADMITS; i++) await redis.ping();
  const us = ((performance.now() - began) * 1000) / ADMITS;
  await closeRedis(redis);
  return us;
}

async function main(): Promise<void> {
  const coordination = await createRedisCoordination({ url: URL, keyPrefix: `bench:${randomBytes(4).toString('hex')}:`, onOutage: 'fail_closed', commandTimeoutMs: 1000, policy: DEFAULT_LIMIT_POLICY, logger: pino({ level: 'warn' }) });
  const local = new RateLimiter(DEFAULT_LIMIT_POLICY);
  const rows: { local: number; redis: number; ping: number }[] = [];
  await admitsUs(local, -1);
  await admitsUs(coordination.admission, -1);
  for (let r = 0; r < ROUNDS; r++) rows.push({ local: await admitsUs(local, r), redis: await admitsUs(coordination.admission, r), ping: await pingUs() });
  await coordination.close();
  const m = (k: 'local' | 'redis' | 'ping'): string => (median(rows.map((row) => row[k])) ?? 0).toFixed(2);
  process.stdout.write(`${ADMITS} sequential admits, median of ${ROUNDS} rounds (µs per call):\n`);
  process.stdout.write(`  in-process RateLimiter  ${m('local')}\n  Redis port (EVALSHA)    ${m('redis')}\n  Redis PING round trip   ${m('ping')}\n`);
}

runIfEntryPoint(import.meta.url, 'redis-admission', main);
