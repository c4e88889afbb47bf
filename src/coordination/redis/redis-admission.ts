/**
 * The admission port over Redis (issue 12): N replicas share exact request and token limits. Each
 * admission is one EVALSHA of the sliding-window script (sliding-window-script.ts), which checks and
 * consumes the project counter, the key's quota counter and reads the token counter atomically; the
 * Admission is then built by RateLimiter's own rules (admission-of-counts.ts) and ceilings (a ShareLimiter,
 * share-limiter.ts, is kept for its `fullCeiling` and as the outage fallback), so Redis and in-process agree on every count,
 * wait, header and refusal.
 *
 * Counter identity is RateLimiter's: project + class, the key's quota by key id with the key's window,
 * the project's tokens. Keys are `<prefix>{<project id>}:...` (one hash slot per project, so a script's
 * keys stay together on a cluster) and expire a margin after their window, so idle counters vanish.
 *
 * Outage (coordination.on_outage, docs/decisions.md "Shared limits in Redis", "A slow Redis is not a
 * down Redis"): a dropped or refused connection, or an error reply, marks Redis down; until a probe
 * answers again every admission goes to the local ShareLimiter (fail_open: this replica admits at most its
 * share of each ceiling, the ceiling over the live replicas) or is refused with 503 limits_unavailable
 * (fail_closed; management requests are counted at the share either way), without trying Redis per
 * request. A command that merely takes longer than command_timeout_ms on a connection that is up is not
 * an outage: the script may yet run and count that request, so the request is refused 503
 * limits_unavailable and never also admitted locally (admitting it against a local ceiling is how three
 * replicas once admitted 585 of 150); a management request is counted at the share instead. Only when nothing has answered
 * for the stall bound since something was sent, not even a late reply (a hung Redis), is it treated as down,
 * and a late reply ends such an outage. Each transition is logged once.
 */
import type { Redis } from 'ioredis';
import type { AdmissionPort, DependencyHealth } from '../../core/coordination/admission-port.js';
import type { Admission, LimitClass, LimitPolicy } from '../../core/limits/rate-limiter.js';
import { BUCKETS_PER_WINDOW } from '../../core/limits/sliding-window.js';
import type { ApiKeyRecord, ProjectRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { admissionOfCounts, type AdmissionLimits, type CounterReadings } from './admission-of-counts.js';
import { causeOf } from './redis-connection.js';
import { ShareLimiter } from './share-limiter.js';
import { SLIDING_WINDOW_SCRIPT, SLIDING_WINDOW_SCRIPT_SHA } from './sliding-window-script.js';

export type OutagePolicy = 'fail_open' | 'fail_closed';

export interface RedisAdmissionOptions {
  /** A connection opened with redis-connection.ts's options (no offline queue, a command timeout). */
  readonly redis: Redis;
  readonly keyPrefix: string;
  readonly onOutage: OutagePolicy;
  readonly policy: LimitPolicy;
  readonly logger: Logger;
  /** How often a down Redis is asked again (PING); the connection's `ready` also asks at once. */
  readonly probeEveryMs?: number;
  /** The connection's command timeout: how long an admission waits for the script before it is refused. */
  readonly commandTimeoutMs?: number;
}

const MINUTE_MS = 60_000;
/** Counters outlive their window by this much: a key that expires has nothing left to count. */
const TTL_MARGIN_MS = 60_000;
const DEFAULT_PROBE_MS = 500;
const DEFAULT_COMMAND_TIMEOUT_MS = 250;
/** A Redis that has answered nothing for this long (and at least 8 command timeouts) is hung, i.e. down. */
const MIN_STALL_MS = 2000;
const STALL_TIMEOUTS = 8;
/** ioredis's rejection of a command past its `commandTimeout` (Command.js); the connection may be fine. */
const COMMAND_TIMED_OUT = 'Command timed out';
const UNMETERED: Admission = { view: null, refusal: null };

export class RedisAdmission implements AdmissionPort {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #failOpen: boolean;
  readonly #local: ShareLimiter;
  readonly #logger: Logger;
  readonly #probeEveryMs: number;
  readonly #timeoutMs: number;
  readonly #stallMs: number;
  /** The live replicas the local shares are cut for (countReplicasWith); 1 until wired. */
  #replicas: () => number = () => 1;
  /** Why Redis is treated as down; null while it answers. */
  #down: string | null = null;
  /**
   * When the oldest command sent since Redis last said anything went out; null when nothing has been sent
   * since bytes last arrived. Silence is counted from here, never from the last reply: an idle minute with
   * nothing asked is not a minute without an answer.
   */
  #waitingSince: number | null = null;
  /** The outage is a stall (nothing answered); the first byte back from Redis ends it, a late reply too. */
  #stalled = false;
  /** A PING sent at a timeout has not settled yet (one at a time). */
  #pinging = false;
  #stallCheck: NodeJS.Immediate | null = null;
  #probe: NodeJS.Timeout | null = null;
  #closed = false;
  /** Token charges that did not reach Redis (charged locally instead), for /readyz. */
  #lostCharges = 0;
  /** This event-loop turn's token charges, per project, not yet sent. */
  readonly #pendingCharges = new Map<string, { tokens: number; now: number }>();
  #flushScheduled: NodeJS.Immediate | null = null;

  constructor(options: RedisAdmissionOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#failOpen = options.onOutage === 'fail_open';
    this.#local = new ShareLimiter(options.policy, () => this.#replicas());
    this.#logger = options.logger;
    this.#probeEveryMs = options.probeEveryMs ?? DEFAULT_PROBE_MS;
    this.#timeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.#stallMs = Math.max(MIN_STALL_MS, STALL_TIMEOUTS * this.#timeoutMs);
    if (this.#redis.status === 'ready') this.#loadScript();
    else this.#enterOutage('not connected yet', false);
    this.#redis.on('ready', () => {
      this.#loadScript();
      this.#probeNow();
    });
    this.#redis.on('close', () => this.markDown('connection closed'));
    // Every new socket: ioredis's own parser listens too; this one only notes that Redis said something.
    // A connection still connecting at construction already has its socket: it is not listened to twice.
    let listened: unknown = null;
    const listen = (): void => {
      if (this.#redis.stream === listened) return;
      listened = this.#redis.stream;
      this.#redis.stream.on('data', this.#heard);
    };
    if (this.#redis.stream) listen();
    this.#redis.on('connect', listen);
  }

  /** Bytes arrived: Redis answers, late or not. A stall outage ends here (the connection is up and talking). */
  readonly #heard = (): void => {
    this.#waitingSince = null;
    if (this.#stalled && this.#redis.status === 'ready') this.#leaveOutage();
  };

  /** A command is about to go out: silence is counted from the first one sent since Redis last answered. */
  #sending(): void {
    this.#waitingSince ??= Date.now();
  }

  readonly health = (): DependencyHealth => {
    const replicas = this.#local.replicas();
    if (this.#down === null) return { name: 'redis', ok: true, detail: `shared limits in Redis, ${replicas} live replicas${this.#lostCharges > 0 ? `; ${this.#lostCharges} token charges counted locally during outages` : ''}` };
    return { name: 'redis', ok: false, detail: `${this.#failOpen ? `fail_open: limits counted on this replica only, at 1/${replicas} of each (${replicas} live replicas)` : 'fail_closed: limited requests refused'} (${this.#down})` };
  };

  /** Where the count of live replicas comes from (the instance registry), once the gateway has one. */
  countReplicasWith(live: () => number): void {
    this.#replicas = live;
  }

  admit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission | Promise<Admission> {
    const limits: AdmissionLimits = {
      projectLimit: this.#local.fullCeiling(project, cls),
      projectWindowMs: MINUTE_MS,
      quotaLimit: key.quotaRequests > 0 ? key.quotaRequests : 0,
      quotaWindowMs: key.quotaWindow * 1000,
      tokenLimit: cls === 'inference' && project.tokensPerMinute > 0 ? project.tokensPerMinute : 0,
    };
    // Nothing metered: nothing to ask Redis, and nothing to refuse when it is down (RateLimiter answers the same).
    if (limits.projectLimit === 0 && limits.quotaLimit === 0 && limits.tokenLimit === 0) return UNMETERED;
    if (this.#down !== null) return this.#outageAdmit(project, key, cls, now);
    const scope = `${this.#prefix}{${project.id}}:`;
    const keys = [`${scope}req:${cls}`, `${scope}key:${key.id}`, `${scope}tokens`];
    // The project's token charges not sent yet ride on this admission, applied before it (program order).
    const carried = this.#pendingCharges.get(project.id);
    if (carried) this.#pendingCharges.delete(project.id);
    const args = ['admit', now, BUCKETS_PER_WINDOW, TTL_MARGIN_MS, limits.projectLimit, limits.projectWindowMs, limits.quotaLimit, limits.quotaWindowMs, limits.tokenLimit, MINUTE_MS, carried?.tokens ?? 0, carried?.now ?? now];
    return this.#run(keys, args)
      .then((reply) => admissionOfCounts(limits, readingsOf(reply)))
      .catch((err: unknown) => {
        const timedOut = this.#timedOutWhileUp(err);
        // A timed-out script may yet apply the carried charge: counted here too (the safe side), not as lost.
        if (carried) this.#chargeFailed(project.id, carried.tokens, carried.now, timedOut);
        if (!timedOut) {
          // The connection dropped or Redis answered an error: an outage, this request included.
          this.markDown(causeOf(err));
          return this.#outageAdmit(project, key, cls, now);
        }
        // The control plane is counted here instead (below): revoking a leaked key must not wait for Redis.
        if (cls === 'management') return this.#local.admit(project, key, cls, now);
        // Sent and unanswered: the script may run later and count it, so it is refused, never admitted here too.
        throw new GatewayError('limits_unavailable', {
          message: `The shared rate limiter did not answer within ${this.#timeoutMs} ms and may have counted this request; retry shortly.`,
        });
      });
  }

  chargeTokens(projectId: string, tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    if (this.#down !== null) {
      this.#local.chargeTokens(projectId, tokens, now);
      return;
    }
    // The charges of one event-loop turn are summed per project and sent with the project's next admission
    // (applied before it, so the counts are those of program order), or at the end of the turn as one script
    // run: each run cost Redis ~50 us of CPU (bench/redis-limiter.ts).
    const pending = this.#pendingCharges.get(projectId);
    if (pending) {
      pending.tokens += tokens;
      pending.now = Math.max(pending.now, now);
    } else {
      this.#pendingCharges.set(projectId, { tokens, now });
    }
    this.#flushScheduled ??= setImmediate(this.#flushCharges);
  }

  /** Sends the summed charges (fire and forget: the turns are answered; a lost charge is counted and charged locally). */
  readonly #flushCharges = (): void => {
    this.#flushScheduled = null;
    for (const [projectId, { tokens, now }] of this.#pendingCharges) {
      if (this.#down !== null) {
        this.#local.chargeTokens(projectId, tokens, now);
        continue;
      }
      this.#run([`${this.#prefix}{${projectId}}:tokens`], ['charge', now, BUCKETS_PER_WINDOW, TTL_MARGIN_MS, tokens, MINUTE_MS]).catch((err: unknown) => {
        // A charge past the timeout is a slow Redis, like an admission: it may still land, and is no outage.
        const timedOut = this.#timedOutWhileUp(err);
        this.#chargeFailed(projectId, tokens, now, timedOut);
        if (!timedOut) this.markDown(causeOf(err));
      });
    }
    this.#pendingCharges.clear();
  };

  /**
   * A charge Redis did not confirm is charged locally (what an outage limits with). One that failed is
   * counted for /readyz as lost; one that timed out may still land in Redis, so it is counted twice at
   * worst, the safe side, and not reported lost.
   */
  #chargeFailed(projectId: string, tokens: number, now: number, mayLand: boolean): void {
    if (!mayLand) this.#lostCharges += 1;
    this.#local.chargeTokens(projectId, tokens, now);
  }

  /** Redis treated as down from now on (logged once per outage), until a probe answers. */
  markDown(cause: string): void {
    if (this.#closed || this.#down !== null) return;
    this.#enterOutage(cause, true);
  }

  async close(): Promise<void> {
    if (this.#flushScheduled) clearImmediate(this.#flushScheduled);
    if (this.#stallCheck) clearImmediate(this.#stallCheck);
    this.#flushCharges();
    this.#closed = true;
    if (this.#probe) clearInterval(this.#probe);
    this.#probe = null;
  }

  /**
   * A command past the timeout on a connection that is up (an admission or a token charge): Redis is slow,
   * not down. It becomes down only once nothing at all has arrived from it for the stall bound since a
   * command went out unanswered (a hung server or a silent network keeps the connection "ready" forever).
   * Late replies to timed-out commands, and the PING sent at a timeout, count as answers: a Redis that
   * answers every command in 300 ms against a 250 ms timeout is slow, and declaring it down would let the
   * replicas' local shares add to what it already admitted (issue 32). Silence is counted from the oldest
   * unanswered command, not from the last reply: a probe once read an idle 3 s between two bursts to a
   * Redis answering in 300 ms as "no answer for 4176 ms", and the replicas then admitted twice the limit.
   * The verdict waits for setImmediate, after the poll phase: a replica whose own event loop was blocked
   * reads the replies waiting on its socket before judging Redis silent.
   */
  #timedOutWhileUp(err: unknown): boolean {
    if (!(err instanceof Error) || err.message !== COMMAND_TIMED_OUT || this.#redis.status !== 'ready') return false;
    if (!this.#pinging) {
      // Something cheap in flight, so a Redis that answers at all is heard even when no request follows.
      this.#pinging = true;
      this.#sending();
      const settled = (): void => {
        this.#pinging = false;
      };
      this.#redis.ping().then(settled, settled);
    }
    if (this.#silentForMs() >= this.#stallMs) {
      this.#stallCheck ??= setImmediate(() => {
        this.#stallCheck = null;
        const silent = this.#silentForMs();
        if (silent >= this.#stallMs) this.#stall(`no answer for ${silent} ms (commands time out after ${this.#timeoutMs} ms)`);
      });
    }
    return true;
  }

  /** How long a command has gone out with nothing at all arriving since (0 when nothing is awaited). */
  #silentForMs(): number {
    return this.#waitingSince === null ? 0 : Date.now() - this.#waitingSince;
  }

  #stall(cause: string): void {
    if (this.#closed || this.#down !== null) return;
    this.#stalled = true;
    this.#enterOutage(cause, true);
  }

  #enterOutage(cause: string, log: boolean): void {
    this.#down = cause;
    if (log) {
      this.#logger.warn({ cause, on_outage: this.#failOpen ? 'fail_open' : 'fail_closed' }, this.#failOpen ? 'shared rate limits: Redis unreachable; limiting on this replica only, at its share of each limit, until it answers' : 'shared rate limits: Redis unreachable; refusing limited requests (503 limits_unavailable) until it answers');
    }
    this.#probe ??= setInterval(() => this.#probeNow(), this.#probeEveryMs);
    this.#probe.unref();
  }

  #probeNow(): void {
    if (this.#closed || this.#down === null || this.#redis.status !== 'ready') return;
    this.#sending();
    this.#redis.ping().then(
      () => this.#leaveOutage(),
      () => undefined,
    );
  }

  #leaveOutage(): void {
    if (this.#closed || this.#down === null) return;
    const was = this.#down;
    this.#down = null;
    this.#stalled = false;
    if (this.#probe) clearInterval(this.#probe);
    this.#probe = null;
    this.#logger.info({ after: was }, 'shared rate limits: Redis answers; limits shared again');
  }

  /**
   * Management requests (key revocation and rotation, webhooks, batches, ...: the management class) are
   * counted on this replica's share whatever on_outage says, and so is one whose admission timed out on a
   * slow Redis: refusing them is what would make an outage dangerous (a leaked key that cannot be revoked),
   * and their limit guards against abuse, not cost (docs/decisions.md "Management requests do not wait for
   * the shared limiter").
   */
  #outageAdmit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission {
    if (this.#failOpen || cls === 'management') return this.#local.admit(project, key, cls, now);
    throw new GatewayError('limits_unavailable');
  }

  /**
   * Sent first on every new connection, so that no EVALSHA meets NOSCRIPT after a Redis restart: the
   * commands of one connection run in order, and a charge that went EVALSHA then EVAL could otherwise
   * land after an admission sent later.
   */
  #loadScript(): void {
    this.#redis.script('LOAD', SLIDING_WINDOW_SCRIPT).catch(() => undefined);
  }

  /** EVALSHA, and EVAL once when this Redis has not seen the script (a restart, a flush). */
  async #run(keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    this.#sending();
    try {
      return await this.#redis.evalsha(SLIDING_WINDOW_SCRIPT_SHA, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return this.#redis.eval(SLIDING_WINDOW_SCRIPT, keys.length, ...keys, ...args);
    }
  }
}

function readingsOf(reply: unknown): CounterReadings {
  if (!Array.isArray(reply) || reply.length !== 5) throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
  const [code, projectUsed, projectWaitMs, quotaUsed, quotaWaitMs] = reply.map(Number) as [number, number, number, number, number];
  if (code !== 0 && code !== 1 && code !== 2) throw new Error(`unexpected script code ${code}`);
  return { code, projectUsed, projectWaitMs, quotaUsed, quotaWaitMs };
}
