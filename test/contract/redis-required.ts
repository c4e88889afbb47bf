/**
 * The Redis contract suites need the machine's Redis (127.0.0.1:6379). When it does not answer they
 * fail, loudly and at once, never skip: a suite that skips when its dependency is missing passes in
 * exactly the environment where it was meant to catch something.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.SWITCHBOARD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const REDIS_MISSING = 'Redis is not running on 127.0.0.1:6379; .ci/run starts it';

export async function requireRedis(): Promise<void> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    throw new Error(`${REDIS_MISSING} (${err instanceof Error ? err.message : String(err)})`);
  } finally {
    probe.disconnect();
  }
}

/** A key prefix no other test or run shares. */
export const freshPrefix = (): string => `sbtest:${randomBytes(6).toString('hex')}:`;
