/**
 * The rate of agent connections (issue 31, item 1): each connection of a join or agent key enrolls a
 * manifest, whose schemas are compiled, so a key that reconnects in a loop costs CPU on every turn. The
 * upgrade is admitted against two sliding 60-second windows (sliding-window.ts), per key and per project,
 * check-then-consume (a refused connection consumes nothing), and refused with SPEC's 429
 * `rate_limit_exceeded` envelope and Retry-After (docs/exec.md "Agent protocol").
 *
 * The counters are this process's: with `serve --workers N` or replicas the deployment admits up to N
 * times the rate (docs/decisions.md "Enrollment rate limit"). A limit of 0 is unmetered.
 */
import type { GatewayError } from '../../errors.js';
import { retryStrategy, tooManyRequests } from '../limits/limit-headers.js';
import { SlidingWindowCounter } from '../limits/sliding-window.js';

const WINDOW_MS = 60_000;
/** Sixty buckets (a unit leaves at most 1 s late): ~1 KiB per counter, whatever the limit. */
const BUCKETS = 60;
/** Idle counters are dropped once this many are held (checked as counters are added). */
const SWEEP_AT = 1024;

export interface EnrollmentLimits {
  readonly perKey: number;
  readonly perProject: number;
}

export interface EnrollmentLimiter {
  /** null when admitted (and counted); else the 429 to refuse the upgrade with. */
  admit(projectId: string, keyHash: string, now: number): GatewayError | null;
}

export function createEnrollmentLimiter(limits: EnrollmentLimits): EnrollmentLimiter {
  const counters = new Map<string, SlidingWindowCounter>();

  function counter(name: string, now: number): SlidingWindowCounter {
    let c = counters.get(name);
    if (!c) {
      if (counters.size >= SWEEP_AT) for (const [n, held] of counters) if (held.count(now) === 0) counters.delete(n);
      counters.set(name, (c = new SlidingWindowCounter(WINDOW_MS, BUCKETS)));
    }
    return c;
  }

  function refusal(c: SlidingWindowCounter, what: string, limit: number, now: number): GatewayError {
    const seconds = Math.max(1, Math.ceil(c.msUntilOldestLeaves(now) / 1000));
    return tooManyRequests(
      'rate_limit_exceeded',
      `${what} of ${limit} agent connections (enrollments) per 60 s is reached; retry in ${seconds} s.`,
      seconds,
      retryStrategy('requests', seconds),
    );
  }

  return {
    admit(projectId, keyHash, now) {
      const byKey = limits.perKey > 0 ? counter(`key:${keyHash}`, now) : null;
      const byProject = limits.perProject > 0 ? counter(`project:${projectId}`, now) : null;
      if (byKey && byKey.count(now) >= limits.perKey) return refusal(byKey, "This key's limit", limits.perKey, now);
      if (byProject && byProject.count(now) >= limits.perProject) return refusal(byProject, `Project ${projectId}'s limit`, limits.perProject, now);
      byKey?.add(now);
      byProject?.add(now);
      return null;
    },
  };
}
