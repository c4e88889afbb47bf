/**
 * The throttle port over Redis (issue 31): replicas share the sign-in and OpenID Connect throttles, the
 * agent connection limits and the webhook test deliveries' limit. One EVALSHA of throttle-script.ts per
 * reservation or release; a reset is a DEL. Keys are `<prefix>{throttle}:<name>` (one hash slot, so a
 * reservation's keys stay together on a cluster) and expire a margin after their window.
 *
 * Outage (coordination.on_outage; docs/decisions.md "Sign-in throttles where the limits live"): each call
 * tries Redis (a down connection answers at once: no offline queue) and, when it fails, fail_open counts
 * on this replica (the throttle then holds per replica), fail_closed refuses the attempt (the route
 * answers 503). Throttled work is rare, so there is no outage state to keep: the next attempt tries again.
 */
import type { Redis } from 'ioredis';
import type { ThrottleCounter, ThrottlePort, ThrottleVerdict } from '../../core/coordination/throttle-port.js';
import { CounterThrottles, THROTTLE_BUCKETS } from '../../core/limits/counter-throttles.js';
import type { Logger } from '../../log.js';
import type { OutagePolicy } from './redis-admission.js';
import { causeOf } from './redis-connection.js';
import { THROTTLE_SCRIPT, THROTTLE_SCRIPT_SHA } from './throttle-script.js';

const TTL_MARGIN_MS = 60_000;
/** What fail_closed answers: try again in a few seconds (a Redis restart takes about that). */
const OUTAGE_WAIT_MS = 5_000;

export interface RedisThrottlesOptions {
  readonly redis: Redis;
  readonly keyPrefix: string;
  readonly onOutage: OutagePolicy;
  readonly logger: Logger;
}

export class RedisThrottles implements ThrottlePort {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #failOpen: boolean;
  readonly #logger: Logger;
  readonly #local = new CounterThrottles();
  /** The last call failed: logged once until one succeeds. */
  #failing = false;

  constructor(options: RedisThrottlesOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#failOpen = options.onOutage === 'fail_open';
    this.#logger = options.logger;
  }

  async reserve(counters: readonly ThrottleCounter[], windowMs: number, now: number): Promise<ThrottleVerdict> {
    const keys = counters.map((c) => this.#key(c.name));
    try {
      const reply = await this.#run(keys, ['reserve', now, THROTTLE_BUCKETS, TTL_MARGIN_MS, windowMs, ...counters.map((c) => c.limit)]);
      this.#answered();
      if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected throttle script reply ${JSON.stringify(reply)}`);
      return Number(reply[0]) === 0 ? { admitted: true, at: now } : { admitted: false, waitMs: Number(reply[1]) };
    } catch (err) {
      this.#failed(err);
      if (this.#failOpen) return this.#local.reserveNow(counters, windowMs, now);
      return { admitted: false, waitMs: OUTAGE_WAIT_MS, unavailable: true };
    }
  }

  async release(name: string, windowMs: number, at: number, now: number): Promise<void> {
    try {
      await this.#run([this.#key(name)], ['release', now, THROTTLE_BUCKETS, TTL_MARGIN_MS, windowMs, at]);
      this.#answered();
    } catch (err) {
      this.#failed(err);
      this.#local.releaseNow(name, windowMs, at, now);
    }
  }

  async reset(name: string, windowMs: number, now: number): Promise<void> {
    try {
      await this.#redis.del(this.#key(name));
      this.#answered();
    } catch (err) {
      this.#failed(err);
      this.#local.resetNow(name, windowMs, now);
    }
  }

  #key(name: string): string {
    return `${this.#prefix}{throttle}:${name}`;
  }

  #answered(): void {
    if (!this.#failing) return;
    this.#failing = false;
    this.#logger.info({}, 'throttles (sign-in, agent connections, webhook tests): Redis answers; throttles shared again');
  }

  #failed(err: unknown): void {
    if (this.#failing) return;
    this.#failing = true;
    this.#logger.warn({ cause: causeOf(err), on_outage: this.#failOpen ? 'fail_open' : 'fail_closed' }, this.#failOpen ? 'throttles (sign-in, agent connections, webhook tests): Redis unreachable; throttling on this replica only' : 'throttles (sign-in, agent connections, webhook tests): Redis unreachable; refusing what they guard (503) until it answers');
  }

  /** EVALSHA, and EVAL once when this Redis has not seen the script (a restart, a flush). */
  async #run(keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.#redis.evalsha(THROTTLE_SCRIPT_SHA, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return this.#redis.eval(THROTTLE_SCRIPT, keys.length, ...keys, ...args);
    }
  }
}
