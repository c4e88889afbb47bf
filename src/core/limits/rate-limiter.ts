/**
 * The request and token limiters of SPEC "Limits": per project and route class, plus each key's own quota.
 * It implements the admission port (core/coordination/admission-port.ts) over counters of a CounterSource:
 * private to this thread by default, or in memory shared by the worker threads of `serve --workers N`
 * (src/coordination/shared-memory/), the same algorithm over either (sliding-window.ts).
 *
 * One admission is check-then-consume with no await in between, so concurrent requests on the event loop
 * can never overshoot a ceiling; with shared counters the source's lock is held across the whole of it,
 * so no other thread's admission interleaves either. A refused request consumes nothing.
 */
import type { AdmissionPort, DependencyHealth } from '../coordination/admission-port.js';
import type { ApiKeyRecord, ProjectRecord } from '../records.js';
import { SlidingWindowCounter } from './sliding-window.js';

export type LimitClass = 'inference' | 'management' | 'files' | 'conversation_items';

/** Deployment-wide ceilings of the control-plane classes (SPEC "Management API rate limit"). */
export interface LimitPolicy {
  readonly managementPerMinute: number;
  readonly filesPerMinute: number;
  readonly conversationItemsPerMinute: number;
}

export const DEFAULT_LIMIT_POLICY: LimitPolicy = { managementPerMinute: 60, filesPerMinute: 600, conversationItemsPerMinute: 600 };

const MINUTE_MS = 60_000;
/** SPEC Limits 3: a token refusal always says 60 s; backing off on request rate does not help it. */
export const TOKEN_RETRY_AFTER_SECONDS = 60;

/** Families SPEC lists as control-plane; everything else that needs a key is inference traffic. */
const CONTROL_PLANE = new Set(['management', 'webhooks', 'batches', 'conversations', 'files', 'uploads', 'slos']);

/** Which counter a route draws from, by the route's family (RouteDef.family). */
export function limitClassOf(family: string, method: string, pattern: string): LimitClass {
  if (family === 'files' && ((method === 'POST' && pattern.endsWith('/v1/files')) || (method === 'GET' && pattern.endsWith('/content')))) {
    return 'files';
  }
  if (family === 'conversations' && method === 'POST' && pattern.endsWith('/items')) return 'conversation_items';
  return CONTROL_PLANE.has(family) ? 'management' : 'inference';
}

/** SPEC Limits 2: base + 50% burst (rounded down), at least 3 (free) or 10 (paid); 0 stays unmetered. */
export function inferenceCeiling(base: number, plan: ProjectRecord['plan']): number {
  if (base <= 0) return 0;
  return Math.max(base + Math.floor(base / 2), plan === 'free' ? 3 : 10);
}

/** What the RateLimit headers report: the binding counter (the fewest requests left). */
export interface LimitView {
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the oldest counted request leaves the window, i.e. until Remaining next goes up. */
  readonly resetSeconds: number;
}

export type Refusal =
  | { readonly kind: 'requests'; readonly by: 'project' | 'key'; readonly limit: number; readonly windowSeconds: number; readonly retryAfterSeconds: number }
  | { readonly kind: 'tokens'; readonly limit: number; readonly retryAfterSeconds: number };

export interface Admission {
  /** null: every counter that applies is unmetered, so the numeric headers are omitted. */
  readonly view: LimitView | null;
  readonly refusal: Refusal | null;
}

interface ProjectCounters {
  inference?: SlidingWindowCounter;
  management?: SlidingWindowCounter;
  files?: SlidingWindowCounter;
  conversation_items?: SlidingWindowCounter;
  tokens?: SlidingWindowCounter;
}

/** A request counter as a refusal reads it; `waitMs` (until its oldest unit leaves) is read only when full. */
export interface RefusingCounter {
  readonly limit: number;
  readonly windowMs: number;
  readonly full: boolean;
  readonly waitMs: number;
}

/**
 * The 429 of SPEC Limits when a request counter is full, for every admission port (in process, shared
 * memory, Redis), so that each answers with the same headers and body.
 */
export function requestRefusal(project: RefusingCounter | null, quota: RefusingCounter | null): Admission {
  const projectFull = project?.full === true;
  const quotaFull = quota?.full === true;
  const projectWait = projectFull ? project.waitMs : 0;
  const quotaWait = quotaFull ? quota.waitMs : 0;
  // Both must free a slot; the one that frees later is the one to report.
  const byKey = quotaFull && (!projectFull || quotaWait > projectWait);
  const binding = (byKey ? quota : project) as RefusingCounter;
  // The binding counter is the one that frees later, so Reset and retry_after are the same number. A
  // full counter's wait is in (0, window] (sliding-window.ts), so this is 1..60 s on a minute window.
  const retryAfterSeconds = Math.max(1, Math.ceil(Math.max(projectWait, quotaWait) / 1000));
  return {
    view: { limit: binding.limit, remaining: 0, resetSeconds: retryAfterSeconds },
    refusal: { kind: 'requests', by: byKey ? 'key' : 'project', limit: binding.limit, windowSeconds: Math.round(binding.windowMs / 1000), retryAfterSeconds },
  };
}

interface Candidate {
  readonly counter: SlidingWindowCounter;
  readonly limit: number;
  readonly used: number;
}

/**
 * Where the limiter's counters live. `counter` is asked once per name and window (the limiter keeps what it
 * gets); names: `project:<id>:<class>`, `project:<id>:tokens`, `key:<id>:<window ms>`.
 */
export interface CounterSource {
  counter(name: string, windowMs: number): SlidingWindowCounter;
  /**
   * Counters other threads use too: held across each whole admission or charge (and every `counter`
   * call, which happens inside one). Absent: counters private to this thread, no lock needed.
   */
  readonly lock?: { acquire(): void; release(): void };
  readonly health?: () => DependencyHealth;
}

/** The default: counters private to this thread. */
export const privateCounters: CounterSource = { counter: (_name, windowMs) => new SlidingWindowCounter(windowMs) };

export class RateLimiter implements AdmissionPort {
  readonly #policy: LimitPolicy;
  readonly #source: CounterSource;
  readonly #lock: NonNullable<CounterSource['lock']> | null;
  readonly #projects = new Map<string, ProjectCounters>();
  readonly #keys = new Map<string, SlidingWindowCounter>();
  readonly health?: () => DependencyHealth;

  constructor(policy: LimitPolicy = DEFAULT_LIMIT_POLICY, source: CounterSource = privateCounters) {
    this.#policy = policy;
    this.#source = source;
    this.#lock = source.lock ?? null;
    if (source.health) this.health = source.health;
  }

  /** The ceiling of a class for a project; 0 = unmetered. Management has no burst (SPEC: fixed). */
  ceiling(project: ProjectRecord, cls: LimitClass): number {
    switch (cls) {
      case 'inference':
        return inferenceCeiling(project.requestsPerMinute, project.plan);
      case 'management':
        return this.#policy.managementPerMinute;
      case 'files':
        return this.#policy.filesPerMinute;
      case 'conversation_items':
        return this.#policy.conversationItemsPerMinute;
    }
  }

  admit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission {
    const lock = this.#lock;
    if (lock === null) return this.#admit(project, key, cls, now);
    lock.acquire();
    try {
      return this.#admit(project, key, cls, now);
    } finally {
      lock.release();
    }
  }

  #admit(project: ProjectRecord, key: ApiKeyRecord, cls: LimitClass, now: number): Admission {
    const counters = this.#countersOf(project.id);
    const limit = this.ceiling(project, cls);
    const projectCounter = limit > 0 ? (counters[cls] ??= this.#source.counter(`project:${project.id}:${cls}`, MINUTE_MS)) : null;
    const quotaCounter = key.quotaRequests > 0 ? this.#quotaOf(key) : null;
    const projectUse: Candidate | null = projectCounter ? { counter: projectCounter, limit, used: projectCounter.count(now) } : null;
    const quotaUse: Candidate | null = quotaCounter ? { counter: quotaCounter, limit: key.quotaRequests, used: quotaCounter.count(now) } : null;

    const projectFull = projectUse !== null && projectUse.used >= projectUse.limit;
    const quotaFull = quotaUse !== null && quotaUse.used >= quotaUse.limit;
    if (projectFull || quotaFull) {
      return requestRefusal(
        projectUse && { limit: projectUse.limit, windowMs: projectUse.counter.windowMs, full: projectFull, waitMs: projectFull ? projectUse.counter.msUntilOldestLeaves(now) : 0 },
        quotaUse && { limit: quotaUse.limit, windowMs: quotaUse.counter.windowMs, full: quotaFull, waitMs: quotaFull ? quotaUse.counter.msUntilOldestLeaves(now) : 0 },
      );
    }

    if (cls === 'inference' && project.tokensPerMinute > 0) {
      // Another thread may have charged tokens this one never did: with shared counters, look it up.
      const tokens = counters.tokens ?? (this.#lock === null ? undefined : (counters.tokens = this.#tokensOf(project.id)));
      const used = tokens?.count(now) ?? 0;
      if (used >= project.tokensPerMinute) {
        return {
          view: bindingView(projectUse, quotaUse, now, 0),
          refusal: { kind: 'tokens', limit: project.tokensPerMinute, retryAfterSeconds: TOKEN_RETRY_AFTER_SECONDS },
        };
      }
    }

    projectCounter?.add(now);
    quotaCounter?.add(now);
    return { view: bindingView(projectUse, quotaUse, now, 1), refusal: null };
  }

  /** SPEC Limits 3: prompt + completion - cached, charged once the turn is over. */
  chargeTokens(projectId: string, tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    const lock = this.#lock;
    lock?.acquire();
    try {
      const counters = this.#countersOf(projectId);
      (counters.tokens ??= this.#tokensOf(projectId)).add(now, tokens);
    } finally {
      lock?.release();
    }
  }

  #tokensOf(projectId: string): SlidingWindowCounter {
    return this.#source.counter(`project:${projectId}:tokens`, MINUTE_MS);
  }

  #countersOf(projectId: string): ProjectCounters {
    let counters = this.#projects.get(projectId);
    if (!counters) {
      counters = {};
      this.#projects.set(projectId, counters);
    }
    return counters;
  }

  /** One counter per key (not per value: a rotation keeps the quota); rebuilt when the window changes. */
  #quotaOf(key: ApiKeyRecord): SlidingWindowCounter {
    const windowMs = key.quotaWindow * 1000;
    let counter = this.#keys.get(key.id);
    if (!counter || counter.windowMs !== windowMs) {
      counter = this.#source.counter(`key:${key.id}:${windowMs}`, windowMs);
      this.#keys.set(key.id, counter);
    }
    return counter;
  }
}

/**
 * The counter with the fewest requests left after this one (`added` = 1 when it was admitted); on a tie
 * the key quota, the more specific of the two. null when neither applies.
 */
function bindingView(project: Candidate | null, quota: Candidate | null, now: number, added: number): LimitView | null {
  let binding: Candidate | null = project;
  if (quota && (!project || quota.limit - quota.used <= project.limit - project.used)) binding = quota;
  if (!binding) return null;
  return {
    limit: binding.limit,
    remaining: Math.max(0, binding.limit - binding.used - added),
    resetSeconds: Math.ceil(binding.counter.msUntilOldestLeaves(now) / 1000),
  };
}
