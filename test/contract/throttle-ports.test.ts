/** The throttle contract against each implementation: in process, shared memory (one thread), Redis. */
import pino from 'pino';
import { beforeAll } from 'vitest';
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
