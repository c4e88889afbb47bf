/**
 * The rate of agent connections (issue 31, item 1): each connection of a join or agent key enrolls a
 * manifest, whose schemas are compiled, so a key that reconnects in a loop costs CPU on every turn. The
 * upgrade is admitted against two sliding 60-second windows, per key and per project, reserved before the
 * upgrade (a refused connection consumes nothing), and refused with SPEC's 429 `rate_limit_exceeded`
 * envelope and Retry-After (docs/exec.md "Agent protocol").
 *
 * The counters live where the rate limits live (the throttle port: this process, the workers' shared
 * memory, or Redis), so the limits hold for the deployment across `serve --workers N` and replicas. With
 * Redis unreachable and `coordination.on_outage: fail_closed`, a connection is refused with 503
 * `limits_unavailable`. A limit of 0 is unmetered.
 */
import type { ThrottlePort, ThrottleVerdict } from '../coordination/throttle-port.js';
import { GatewayError } from '../../errors.js';
import { retryStrategy, tooManyRequests } from '../limits/limit-headers.js';

const WINDOW_MS = 60_000;

export interface EnrollmentLimits {
  readonly perKey: number;
  readonly perProject: number;
}

export interface EnrollmentLimiter {
  /** null when admitted (and counted); else the error to refuse the upgrade with. */
  admit(projectId: string, keyHash: string, now: number): Promise<GatewayError | null>;
}

function refusal(verdict: Exclude<ThrottleVerdict, { admitted: true }>, what: string, limit: number): GatewayError {
  if (verdict.unavailable === true) {
    return new GatewayError('limits_unavailable', { message: 'The shared rate limiter is unreachable, and agent connections are refused while it is (coordination.on_outage: fail_closed); retry shortly.' });
  }
  const seconds = Math.max(1, Math.ceil(verdict.waitMs / 1000));
  return tooManyRequests('rate_limit_exceeded', `${what} of ${limit} agent connections (enrollments) per 60 s is reached; retry in ${seconds} s.`, seconds, retryStrategy('requests', seconds));
}

export function createEnrollmentLimiter(limits: EnrollmentLimits, throttles: ThrottlePort): EnrollmentLimiter {
  return {
    async admit(projectId, keyHash, now) {
      // Two reservations, not one over both counters, so a refusal can say which limit it was.
      const byKey = { name: `exec-enroll:key:${keyHash}`, limit: limits.perKey };
      const byProject = { name: `exec-enroll:project:${projectId}`, limit: limits.perProject };
      let keyUnit: number | null = null;
      if (byKey.limit > 0) {
        const verdict = await throttles.reserve([byKey], WINDOW_MS, now);
        if (!verdict.admitted) return refusal(verdict, "This key's limit", byKey.limit);
        keyUnit = verdict.at;
      }
      if (byProject.limit > 0) {
        const verdict = await throttles.reserve([byProject], WINDOW_MS, now);
        if (!verdict.admitted) {
          if (keyUnit !== null) await throttles.release(byKey.name, WINDOW_MS, keyUnit, now);
          return refusal(verdict, `Project ${projectId}'s limit`, byProject.limit);
        }
      }
      return null;
    },
  };
}
