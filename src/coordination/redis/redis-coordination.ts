/**
 * What main.ts builds when `coordination.redis_url` is set (issue 12): the admission port and the bus
 * over one Redis. Starting never waits on Redis for long: the connections get START_WAIT_MS, then the
 * gateway starts anyway in outage mode (coordination.on_outage) and the connections keep trying.
 */
import type { AdmissionPort } from '../../core/coordination/admission-port.js';
import type { Bus } from '../../core/coordination/bus.js';
import type { ThrottlePort } from '../../core/coordination/throttle-port.js';
import type { LimitPolicy } from '../../core/limits/rate-limiter.js';
import type { Logger } from '../../log.js';
import { RedisAdmission, type OutagePolicy } from './redis-admission.js';
import { createRedisBus } from './redis-bus.js';
import { RedisThrottles } from './redis-throttles.js';
import { closeRedis, openRedis, redactedUrl, whenReady } from './redis-connection.js';

export interface RedisCoordinationOptions {
  readonly url: string;
  readonly keyPrefix: string;
  readonly onOutage: OutagePolicy;
  readonly commandTimeoutMs: number;
  readonly policy: LimitPolicy;
  readonly logger: Logger;
}

export interface RedisCoordination {
  readonly admission: AdmissionPort;
  /** Where the live replicas are counted (the instance registry): while Redis is down each admits its share. */
  countReplicasWith(live: () => number): void;
  readonly bus: Bus;
  readonly throttles: ThrottlePort;
  close(): Promise<void>;
}

/** How long a start waits for Redis before running in outage mode. */
export const START_WAIT_MS = 3000;

export async function createRedisCoordination(options: RedisCoordinationOptions): Promise<RedisCoordination> {
  const { logger } = options;
  const limiter = openRedis(options.url, { name: 'switchboard-limits', commandTimeoutMs: options.commandTimeoutMs, offlineQueue: false });
  const bus = createRedisBus({ url: options.url, keyPrefix: options.keyPrefix, commandTimeoutMs: options.commandTimeoutMs, logger });
  const [limiterReady, busReady] = await Promise.all([whenReady(limiter, START_WAIT_MS), bus.whenReady(START_WAIT_MS)]);
  const admission = new RedisAdmission({ redis: limiter, keyPrefix: options.keyPrefix, onOutage: options.onOutage, policy: options.policy, logger, commandTimeoutMs: options.commandTimeoutMs });
  // The throttles share the limits' connection: same timeout, no offline queue, same outage policy.
  const throttles = new RedisThrottles({ redis: limiter, keyPrefix: options.keyPrefix, onOutage: options.onOutage, logger });
  const where = { redis: redactedUrl(options.url), key_prefix: options.keyPrefix, on_outage: options.onOutage };
  if (limiterReady && busReady) logger.info(where, 'coordination: limits and bus shared through Redis');
  else logger.warn({ ...where, waited_ms: START_WAIT_MS }, `coordination: Redis not reachable at start; ${options.onOutage === 'fail_open' ? 'limiting on this replica only' : 'refusing limited requests'} until it answers`);
  return {
    admission,
    bus,
    throttles,
    countReplicasWith: (live) => admission.countReplicasWith(live),
    async close() {
      await admission.close();
      await Promise.all([bus.close(), closeRedis(limiter)]);
    },
  };
}
