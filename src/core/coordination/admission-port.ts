/**
 * The admission port (issue 12): the request and token limiters of SPEC "Limits" behind one interface, so
 * that the counters can live in this process (the embedded default, `RateLimiter`), in memory shared by
 * the worker threads of `serve --workers N`, or in Redis for N replicas.
 *
 * `admit` is synchronous on the embedded path, the fast path every request takes by default: a caller
 * awaits only when it got a Promise (`isPromise`), so the default adds no microtask. One admission is
 * check-then-consume atomically in every implementation (no interleaving can overshoot a ceiling), and a
 * refused request consumes nothing.
 */
import type { Admission, LimitClass } from '../limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../records.js';

export interface AdmissionPort {
  admit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission | Promise<Admission>;
  /** SPEC Limits 3: prompt + completion - cached, charged once the turn is over. Never throws. */
  chargeTokens(projectId: string, tokens: number, now: number): void;
  /** What /readyz reports about the shared counters; absent on the in-process implementation. */
  readonly health?: () => DependencyHealth;
  close?(): Promise<void>;
}

export interface DependencyHealth {
  readonly name: string;
  readonly ok: boolean;
  readonly detail?: string;
}

export const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === 'function';
