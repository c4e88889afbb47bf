/**
 * Which coordination a gateway runs with (issue 12), chosen once at start from the config:
 *   - `coordination.redis_url` set: counters and bus in Redis, shared by N replicas (redis/), whether or
 *     not each replica also runs worker threads;
 *   - worker threads of `serve --workers N` (`shared` given): counters in the process's SharedArrayBuffer
 *     (shared-memory/) and a BroadcastChannel bus: exact limits with no external service;
 *   - otherwise: counters private to this thread and no bus, the embedded default and its fast path.
 */
import type { Config } from '../config.js';
import type { AdmissionPort } from '../core/coordination/admission-port.js';
import { localBus, type Bus } from '../core/coordination/bus.js';
import type { ThrottlePort } from '../core/coordination/throttle-port.js';
import { CounterThrottles } from '../core/limits/counter-throttles.js';
import { RateLimiter, type LimitPolicy } from '../core/limits/rate-limiter.js';
import type { Logger } from '../log.js';
import { createBroadcastBus } from './broadcast-bus.js';
import { SharedCounterTable } from './shared-memory/shared-counter-table.js';
import { SharedThrottleTable } from './shared-memory/shared-throttle-table.js';

export interface Coordination {
  readonly admission: AdmissionPort;
  readonly bus: Bus;
  /** Named attempt counters (sign-in throttles), kept where the limits are (issue 31). */
  readonly throttles: ThrottlePort;
  /** Which of the three, for the start-up log. */
  readonly mode: 'redis' | 'shared_memory' | 'in_process';
  /**
   * Redis only: where the live replicas are counted (the instance registry), so that while Redis is down
   * each admits at most its share of every ceiling (src/coordination/redis/share-limiter.ts).
   */
  countReplicasWith?(live: () => number): void;
  close(): Promise<void>;
}

/** What the main thread of `serve --workers N` hands each worker for coordination. */
export interface SharedCoordination {
  /** createSharedCounterBuffer's buffer, one for the whole process. */
  readonly counters: SharedArrayBuffer;
  /** createSharedThrottleBuffer's buffer, one for the whole process. */
  readonly throttles: SharedArrayBuffer;
  /** The BroadcastChannel name of this launch (broadcastChannelName). */
  readonly channel: string;
  readonly workerIndex: number;
  /** How many workers the launch runs (the RPC between them counts who did not answer: worker-rpc.ts). */
  readonly workers: number;
}

export function limitPolicyOf(config: Config): LimitPolicy {
  return {
    managementPerMinute: config.limits.management_requests_per_minute,
    filesPerMinute: config.limits.files_requests_per_minute,
    conversationItemsPerMinute: config.limits.conversation_items_requests_per_minute,
  };
}

export async function createCoordination(config: Config, logger: Logger, shared?: SharedCoordination): Promise<Coordination> {
  const policy = limitPolicyOf(config);
  const redisUrl = config.coordination.redis_url;
  if (redisUrl !== undefined) {
    // ioredis and the scripts load only when Redis is configured (a tenth of a second of every other start).
    const { createRedisCoordination } = await import('./redis/index.js');
    const redis = await createRedisCoordination({
      url: redisUrl,
      keyPrefix: config.coordination.key_prefix,
      onOutage: config.coordination.on_outage,
      commandTimeoutMs: config.coordination.command_timeout_ms,
      policy,
      logger,
    });
    return { ...redis, mode: 'redis' };
  }
  if (shared !== undefined) {
    const table = new SharedCounterTable(shared.counters, {
      tag: shared.workerIndex + 1,
      onFull: (name, capacity) => logger.warn({ counter: name, capacity }, 'shared limit counters full: this limit now counts per worker, not across them'),
    });
    const bus = createBroadcastBus(shared.channel, String(shared.workerIndex));
    const throttleTable = new SharedThrottleTable(shared.throttles, table.lock, () =>
      logger.warn({}, 'shared throttle counters full (a flood of distinct e-mails or addresses): new ones count per worker until old ones go idle'),
    );
    return { admission: new RateLimiter(policy, table), bus, throttles: new CounterThrottles(throttleTable), mode: 'shared_memory', close: () => bus.close() };
  }
  return { admission: new RateLimiter(policy), bus: localBus, throttles: new CounterThrottles(), mode: 'in_process', close: async () => undefined };
}
