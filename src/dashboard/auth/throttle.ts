/**
 * Throttling of sign-in attempts (issue 22, SPEC Authentication 13; issue 31): failed passwords and second
 * factors per account and per client address, and OpenID Connect starts per address and overall.
 *
 * The counters are the throttle port's (core/coordination/throttle-port.ts), where the rate limits live:
 * they hold across `serve --workers N` and across replicas. An attempt is counted as a failure before it
 * is checked (`attempt` reserves one unit of each counter, or is refused having taken none), so concurrent
 * attempts cannot all pass a check made before any of them failed, and a refused attempt costs no password
 * hash. A success (`succeeded`) resets its account and gives its address unit back: only failures count
 * against an address (one address may serve many people, behind one NAT).
 *
 * Counter names hold digests, never the e-mail or address itself: the value is the caller's to choose
 * (any length) and the names may sit in Redis.
 */
import type { ThrottleCounter, ThrottlePort } from '../../core/coordination/throttle-port.js';
import type { RouteContext } from '../../http/server.js';
import { sha256 } from './secrets.js';

export interface ThrottleRule {
  /** Failures allowed per account in the window; absent: not counted per account. */
  readonly account?: number;
  readonly address: number;
  /** Attempts of everyone together; absent: not counted overall. */
  readonly overall?: number;
  readonly windowMs: number;
}

export type Attempt =
  /** Counted as a failure until `succeeded` says otherwise. */
  | { readonly kind: 'admitted'; succeeded(): Promise<void> }
  /** Refused, nothing run: a counter is full for `waitMs`, or (Redis fail_closed) the counters cannot be reached. */
  | { readonly kind: 'refused' | 'unavailable'; readonly waitMs: number };

export interface AttemptThrottle {
  attempt(who: { readonly account?: string; readonly address: string }): Promise<Attempt>;
}

export function createAttemptThrottle(port: ThrottlePort, kind: string, rule: ThrottleRule, now: () => number): AttemptThrottle {
  const { windowMs } = rule;
  const nameOf = (scope: string, value: string): string => `${kind}:${scope}:${sha256(value)}`;
  return {
    async attempt(who) {
      const byAccount = rule.account !== undefined && who.account !== undefined ? nameOf('account', who.account) : null;
      const byAddress = nameOf('address', who.address);
      const counters: ThrottleCounter[] = [{ name: byAddress, limit: rule.address }];
      if (byAccount !== null && rule.account !== undefined) counters.push({ name: byAccount, limit: rule.account });
      if (rule.overall !== undefined) counters.push({ name: `${kind}:overall`, limit: rule.overall });
      const verdict = await port.reserve(counters, windowMs, now());
      if (!verdict.admitted) return { kind: verdict.unavailable === true ? 'unavailable' : 'refused', waitMs: verdict.waitMs };
      return {
        kind: 'admitted',
        async succeeded() {
          await Promise.all([byAccount === null ? undefined : port.reset(byAccount, windowMs, now()), port.release(byAddress, windowMs, verdict.at, now())]);
        },
      };
    },
  };
}

/** The status and sentence of a refused attempt, with its Retry-After set. `what`: "failed sign-ins", ... */
export function refusalOf(ctx: RouteContext, attempt: Exclude<Attempt, { kind: 'admitted' }>, what: string): { status: number; message: string } {
  ctx.reply.setHeader('Retry-After', String(Math.max(1, Math.ceil(attempt.waitMs / 1000))));
  if (attempt.kind === 'unavailable') return { status: 503, message: 'Sign-in is unavailable for a moment (the shared counters cannot be reached): try again in a few seconds.' };
  const minutes = Math.max(1, Math.ceil(attempt.waitMs / 60_000));
  return { status: 429, message: `Too many ${what}: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` };
}
