/** The throttle contract against each implementation: in process, shared memory (one thread), Redis. */
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { CounterThrottles } from '../../src/core/limits/counter-throttles.js';
import { RedisThrottles } from '../../src/coordination/redis/redis-throttles.js';
import { closeRedis, openRedis } from '../../src/coordination/redis/redis-connection.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../../src/coordination/shared-memory/shared-counter-table.js';
import { createSharedThrottleBuffer, SharedThrottleTable } from '../../src/coordination/shared-memory/shared-throttle-table.js';
import { freshPrefix, REDIS_URL, requireRedis } from './redis-required.js';
import { throttleContract } from './throttle-contract.js';

beforeAll(requireRedis);

throttleContract('in process', async () => ({ port: new CounterThrottles(), close: async () => undefined }));

throttleContract('shared memory', async () => {
  const lock = new SharedCounterTable(createSharedCounterBuffer(4), { tag: 1 }).lock;
  return { port: new CounterThrottles(new SharedThrottleTable(createSharedThrottleBuffer(64), lock)), close: async () => undefined };
});

throttleContract('Redis', async () => {
  const redis = openRedis(REDIS_URL, { name: 'switchboard-test-throttles', commandTimeoutMs: 2000, offlineQueue: false });
  await new Promise((resolve) => redis.once('ready', resolve));
  return {
    port: new RedisThrottles({ redis, keyPrefix: freshPrefix(), onOutage: 'fail_closed', logger: pino({ level: 'silent' }) }),
    close: () => closeRedis(redis),
  };
});

describe('RedisThrottles while Redis does not answer (coordination.on_outage)', () => {
  /** A connection to a port nothing listens on: with no offline queue every command fails at once. */
  const unreachable = (onOutage: 'fail_open' | 'fail_closed'): { port: RedisThrottles; close: () => Promise<void> } => {
    const redis = openRedis('redis://127.0.0.1:1', { name: 'switchboard-test-throttles', commandTimeoutMs: 200, offlineQueue: false });
    return { port: new RedisThrottles({ redis, keyPrefix: freshPrefix(), onOutage, logger: pino({ level: 'silent' }) }), close: () => closeRedis(redis) };
  };

  it('fail_closed refuses every attempt as unavailable', async () => {
    const { port, close } = unreachable('fail_closed');
    expect(await port.reserve([{ name: 'a', limit: 5 }], 60_000, 0)).toEqual({ admitted: false, waitMs: 5000, unavailable: true });
    await close();
  });

  it('fail_open counts on this replica, still to the limit', async () => {
    const { port, close } = unreachable('fail_open');
    expect((await port.reserve([{ name: 'a', limit: 1 }], 60_000, 0)).admitted).toBe(true);
    expect((await port.reserve([{ name: 'a', limit: 1 }], 60_000, 1)).admitted).toBe(false);
    await close();
  });
});
