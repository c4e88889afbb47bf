/**
 * What a replica limits with while Redis is down and `on_outage` is fail_open (issue 32): RateLimiter's
 * counters and rules in this replica, each ceiling cut to this replica's share of it, floor(ceiling /
 * live replicas), so that the replicas together still admit at most the ceiling in a window (docs/deploy.md
 * "Shared limits while Redis is down"). The count of live replicas is the instance registry's (every
 * registered gateway instance, worker threads included: each admits on its own counters); an unknown count
 * is 1 only before the registry is wired in, when nothing is served yet.
 *
 * A ceiling smaller than the number of replicas has a share of 0: nothing can be admitted without
 * exceeding it, and the request is refused 503 limits_unavailable (retryable) rather than 429, since
 * the limit itself is not spent.
 */
import { RateLimiter, type Admission, type LimitClass, type LimitPolicy } from '../../core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';

export class ShareLimiter extends RateLimiter {
  readonly #replicas: () => number;
  /** The divisor of the admission under way (read by `ceiling`, which RateLimiter calls inside it). */
  #share = 1;

  constructor(policy: LimitPolicy, replicas: () => number) {
    super(policy);
    this.#replicas = replicas;
  }

  /** The deployment's ceiling of a class, what Redis holds the replicas to together. */
  fullCeiling(project: ProjectRecord, cls: LimitClass): number {
    return super.ceiling(project, cls);
  }

  /** This replica's share of the ceiling, during an admission (RateLimiter reads its ceilings here). */
  override ceiling(project: ProjectRecord, cls: LimitClass): number {
    return Math.floor(super.ceiling(project, cls) / this.#share);
  }

  /** How many replicas the ceilings are split among now (at least 1). */
  replicas(): number {
    const n = this.#replicas();
    return Number.isInteger(n) && n > 1 ? n : 1;
  }

  override admit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission {
    const n = this.replicas();
    this.#share = n;
    if (n === 1) return super.admit(project, key, cls, now);
    const ceiling = super.ceiling(project, cls);
    const quota = key.quotaRequests;
    const tokens = cls === 'inference' ? project.tokensPerMinute : 0;
    // A limit of 0 is "unmetered" to RateLimiter: a share that rounds to 0 must refuse, never unmeter.
    const unsplittable = [ceiling, quota, tokens].find((limit) => limit > 0 && limit < n);
    if (unsplittable !== undefined) {
      throw new GatewayError('limits_unavailable', {
        message: `The shared rate limiter is unreachable, and a limit of ${unsplittable} cannot be split among the ${n} replicas counting on their own meanwhile; retry shortly.`,
      });
    }
    const ownKey = quota > 0 ? { ...key, quotaRequests: Math.floor(quota / n) } : key;
    const ownProject = tokens > 0 ? { ...project, tokensPerMinute: Math.floor(tokens / n) } : project;
    return super.admit(ownProject, ownKey, cls, now);
  }
}
