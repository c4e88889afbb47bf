/** The bus contract over Redis pub/sub: two peers as two replicas would be, on a fresh channel each test. */
import { Redis } from 'ioredis';
import pino from 'pino';
import { beforeAll } from 'vitest';
import { createRedisBus } from '../../src/coordination/redis/redis-bus.js';
import { busContract } from './bus-contract.js';
import { freshPrefix, REDIS_URL, requireRedis } from './redis-required.js';

beforeAll(requireRedis);

busContract('Redis pub/sub', async () => {
  const keyPrefix = freshPrefix();
  const logger = pino({ level: 'silent' });
  const [a, b] = [0, 1].map(() => createRedisBus({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 1000, logger }));
  if (!a || !b) throw new Error('two peers');
  await Promise.all([a.whenReady(3000), b.whenReady(3000)]);
  const foreign = new Redis(REDIS_URL);
  return {
    a,
    b,
    injectRaw: async (raw) => void (await foreign.publish(`${keyPrefix}bus`, raw)),
    async close() {
      foreign.disconnect();
      await Promise.all([a.close(), b.close()]);
    },
  };
});
