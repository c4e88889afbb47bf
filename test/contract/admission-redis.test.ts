/** The admission contract against Redis (src/coordination/redis), each test on a fresh key prefix. */
import pino from 'pino';
import { beforeAll } from 'vitest';
import { DEFAULT_LIMIT_POLICY } from '../../src/core/limits/rate-limiter.js';
import { createRedisCoordination } from '../../src/coordination/redis/index.js';
import { admissionContract } from './admission-contract.js';
import { freshPrefix, REDIS_URL, requireRedis } from './redis-required.js';

beforeAll(requireRedis);

admissionContract('Redis', async () => {
  const coordination = await createRedisCoordination({
    url: REDIS_URL,
    keyPrefix: freshPrefix(),
    onOutage: 'fail_closed',
    commandTimeoutMs: 2000,
    policy: DEFAULT_LIMIT_POLICY,
    logger: pino({ level: 'silent' }),
  });
  return { port: coordination.admission, close: () => coordination.close() };
});
