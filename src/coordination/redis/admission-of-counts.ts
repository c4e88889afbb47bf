/**
 * The Admission a RateLimiter would return, built from what the Redis script read (sliding-window-script.ts):
 * which counter binds the RateLimit headers, which refusal to send and its wait. The rules are
 * RateLimiter.admit's (src/core/limits/rate-limiter.ts) line for line; the contract suite
 * (test/contract/admission-contract.ts) holds both implementations to the same answers.
 */
import { requestRefusal, TOKEN_RETRY_AFTER_SECONDS, type Admission, type LimitView } from '../../core/limits/rate-limiter.js';

/** What one admission asked of the script; a limit of 0 means that counter does not apply. */
export interface AdmissionLimits {
  readonly projectLimit: number;
  readonly projectWindowMs: number;
  readonly quotaLimit: number;
  readonly quotaWindowMs: number;
  readonly tokenLimit: number;
}

/** The script's answer: 0 admitted, 1 a request counter full, 2 tokens spent; used = before this request. */
export interface CounterReadings {
  readonly code: 0 | 1 | 2;
  readonly projectUsed: number;
  readonly projectWaitMs: number;
  readonly quotaUsed: number;
  readonly quotaWaitMs: number;
}

interface Candidate {
  readonly limit: number;
  readonly used: number;
  readonly waitMs: number;
}

export function admissionOfCounts(limits: AdmissionLimits, r: CounterReadings): Admission {
  const project: Candidate | null = limits.projectLimit > 0 ? { limit: limits.projectLimit, used: r.projectUsed, waitMs: r.projectWaitMs } : null;
  const quota: Candidate | null = limits.quotaLimit > 0 ? { limit: limits.quotaLimit, used: r.quotaUsed, waitMs: r.quotaWaitMs } : null;
  if (r.code === 1) {
    return requestRefusal(
      project && { limit: project.limit, windowMs: limits.projectWindowMs, full: project.used >= project.limit, waitMs: project.waitMs },
      quota && { limit: quota.limit, windowMs: limits.quotaWindowMs, full: quota.used >= quota.limit, waitMs: quota.waitMs },
    );
  }
  if (r.code === 2) {
    return { view: bindingView(project, quota, 0), refusal: { kind: 'tokens', limit: limits.tokenLimit, retryAfterSeconds: TOKEN_RETRY_AFTER_SECONDS } };
  }
  return { view: bindingView(project, quota, 1), refusal: null };
}

/** RateLimiter's rule: the fewest requests left after this one; on a tie the key quota. */
function bindingView(project: Candidate | null, quota: Candidate | null, added: number): LimitView | null {
  let binding: Candidate | null = project;
  if (quota && (!project || quota.limit - quota.used <= project.limit - project.used)) binding = quota;
  if (!binding) return null;
  return { limit: binding.limit, remaining: Math.max(0, binding.limit - binding.used - added), resetSeconds: Math.ceil(binding.waitMs / 1000) };
}
