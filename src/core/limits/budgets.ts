/**
 * The budget ledger (docs/decisions.md "Budgets"): spend per endpoint and per workspace, tracked in memory
 * in tokens and in nano-dollars, charged from the same per-turn event as the token limiter, and rebuilt from
 * the usage ledger at start; caps come from the config file, overridden by the management API. The caps,
 * their windows and their arithmetic are budget-caps.ts.
 *
 * At or above 80% of a cap, responses carry `X-Service-Budget-Warning: <level>:<window>`; a spent cap
 * refuses the next request. Like the token limiter, a turn is charged after it completes, so the turn that
 * crosses a cap finishes and the next request is refused.
 */
import {
  asWritten,
  BUDGET_UNITS,
  BUDGET_WINDOWS,
  capMeasure,
  capOf,
  DAY_MS,
  hasCap,
  HOUR_MS,
  NO_CAPS,
  NO_SPEND,
  reachesWarning,
  retryAfter,
  WARNING_PERCENT,
  type BudgetCaps,
  type BudgetExhaustion,
  type BudgetLevel,
  type BudgetSpend,
  type BudgetUnit,
  type BudgetWindow,
} from './budget-caps.js';

/** Fired once per budget window when spend crosses the warning threshold (the webhook hook). */
export interface BudgetThresholdEvent {
  readonly projectId: string;
  readonly level: BudgetLevel;
  /** Endpoint id (UUID) or workspace id (`ws_...`). */
  readonly targetId: string;
  readonly window: BudgetWindow;
  readonly unit: BudgetUnit;
  readonly thresholdPercent: number;
  /** Tokens, or whole cents (halves up) for a money budget. */
  readonly spent: number;
  readonly cap: number;
  /** From the exact spend (nano-dollars for money), two decimals. */
  readonly spendPercentage: number;
  /** Start of the hour or day (Unix ms); null for the hard cap. */
  readonly windowStart: number | null;
  readonly at: number;
}

export interface BudgetVerdict {
  /** `endpoint:hourly, workspace:daily`; null when no budget is at its warning threshold. */
  readonly warning: string | null;
  readonly exhausted: BudgetExhaustion | null;
}

export interface BudgetDescription {
  readonly caps: BudgetCaps | null;
  readonly source: 'api' | 'config' | null;
  /** Tokens. */
  readonly spend: BudgetSpend;
  /** Nano-dollars of the priced turns (an unpriced turn costs 0). */
  readonly spendNanos: BudgetSpend;
}

interface BudgetState {
  readonly projectId: string;
  readonly level: BudgetLevel;
  readonly targetId: string;
  configCaps: BudgetCaps | null;
  /** undefined: no API override; NO_CAPS-like values: the API removed every cap. */
  apiCaps: BudgetCaps | undefined;
  hourId: number;
  hourly: number;
  dayId: number;
  daily: number;
  total: number;
  /** Nano-dollars, in the same windows. */
  hourlyNanos: number;
  dailyNanos: number;
  totalNanos: number;
  /** Window id and cap for which the threshold event last fired, per unit and window. */
  fired: Record<`${BudgetUnit}:${BudgetWindow}`, string>;
}

/**
 * What this process changed, for the bus between replicas (src/coordination/bus-wiring.ts): each turn it
 * charged, and each API cap it set. Changes applied from other replicas are not reported back.
 */
export interface BudgetChangeListener {
  charged(projectId: string, endpointId: string, workspaceId: string | null, tokens: number, costNanos: number, at: number): void;
  apiCapsSet(): void;
}

/** An API cap as stored (store/budgets-repo.ts), for replacing every override at once. */
export interface ApiCapsEntry {
  readonly level: BudgetLevel;
  readonly projectId: string;
  readonly targetId: string;
  readonly caps: BudgetCaps;
}

export class Budgets {
  /** By level, project and target: nested maps, so the per-turn charge builds no key string. */
  readonly #states: Record<BudgetLevel, Map<string, Map<string, BudgetState>>> = { endpoint: new Map(), workspace: new Map() };
  /** States with at least one effective cap: zero means the request path returns at once. */
  #capped = 0;
  #listener: ((event: BudgetThresholdEvent) => void) | null = null;
  #onListenerError: (err: unknown) => void = () => undefined;
  /** null on one process: the per-turn charge then costs one null check. */
  #changes: BudgetChangeListener | null = null;

  /** Sets the threshold callback (main.ts; the webhooks engine turns it into budget.threshold_reached). */
  onBudgetThreshold(listener: ((event: BudgetThresholdEvent) => void) | null, onError?: (err: unknown) => void): void {
    this.#listener = listener;
    if (onError) this.#onListenerError = onError;
  }

  /** Sets the listener of local changes (bus-wiring.ts; none on one process). */
  onLocalChange(listener: BudgetChangeListener | null): void {
    this.#changes = listener;
  }

  setConfigCaps(level: BudgetLevel, projectId: string, targetId: string, caps: BudgetCaps | null): void {
    this.#update(this.#state(level, projectId, targetId), (s) => (s.configCaps = caps));
  }

  /** `undefined` removes the API override, so the config file's caps apply again. */
  setApiCaps(level: BudgetLevel, projectId: string, targetId: string, caps: BudgetCaps | undefined): void {
    this.#update(this.#state(level, projectId, targetId), (s) => (s.apiCaps = caps));
    this.#changes?.apiCapsSet();
  }

  /**
   * Every API override replaced by the stored ones (another replica set or removed one): listed entries
   * set, overrides not listed removed. Not reported as a local change.
   */
  replaceApiCaps(entries: readonly ApiCapsEntry[]): void {
    const listed = new Set(entries.map((e) => `${e.level}\u0000${e.projectId}\u0000${e.targetId}`));
    for (const level of ['endpoint', 'workspace'] as const) {
      for (const byTarget of this.#states[level].values()) {
        for (const s of byTarget.values()) {
          if (s.apiCaps !== undefined && !listed.has(`${level}\u0000${s.projectId}\u0000${s.targetId}`)) this.#update(s, (x) => (x.apiCaps = undefined));
        }
      }
    }
    for (const e of entries) this.#update(this.#state(e.level, e.projectId, e.targetId), (s) => (s.apiCaps = e.caps));
  }

  /** At start: spend rebuilt from the usage ledger for the current hour, day and all time (tokens, and nano-dollars). */
  loadSpend(level: BudgetLevel, projectId: string, targetId: string, spend: BudgetSpend, now: number, spendNanos: BudgetSpend = NO_SPEND): void {
    const s = this.#state(level, projectId, targetId);
    s.hourId = Math.floor(now / HOUR_MS);
    s.dayId = Math.floor(now / DAY_MS);
    s.hourly = spend.hourly;
    s.daily = spend.daily;
    s.total = spend.total;
    s.hourlyNanos = spendNanos.hourly;
    s.dailyNanos = spendNanos.daily;
    s.totalNanos = spendNanos.total;
    // Already past the threshold before this process started: the event was due then, not now.
    const caps = effectiveCaps(s);
    if (!caps) return;
    for (const unit of BUDGET_UNITS) {
      for (const w of BUDGET_WINDOWS) if (this.#over(s, caps, w, unit)) s.fired[`${unit}:${w}`] = this.#firedKey(s, caps, w, unit);
    }
  }

  /**
   * The usage ledger's spend, read at `at`, where it is more than this process counted: turns of other
   * replicas whose bus message was lost (docs/decisions.md "Budget spend follows the ledger"). Each window
   * is raised to the ledger's, never lowered: turns charged here and not yet in the ledger stay counted. A
   * window this process has already rolled past `at` is left alone. A threshold crossed is marked as sent,
   * without an alert: the replica that charged those turns sent it.
   */
  raiseSpend(level: BudgetLevel, projectId: string, targetId: string, spend: BudgetSpend, at: number, spendNanos: BudgetSpend = NO_SPEND): void {
    const s = this.#state(level, projectId, targetId);
    this.#roll(s, at);
    if (s.hourId === Math.floor(at / HOUR_MS)) {
      s.hourly = Math.max(s.hourly, spend.hourly);
      s.hourlyNanos = Math.max(s.hourlyNanos, spendNanos.hourly);
    }
    if (s.dayId === Math.floor(at / DAY_MS)) {
      s.daily = Math.max(s.daily, spend.daily);
      s.dailyNanos = Math.max(s.dailyNanos, spendNanos.daily);
    }
    s.total = Math.max(s.total, spend.total);
    s.totalNanos = Math.max(s.totalNanos, spendNanos.total);
    const caps = effectiveCaps(s);
    if (!caps) return;
    for (const unit of BUDGET_UNITS) {
      for (const w of BUDGET_WINDOWS) if (this.#over(s, caps, w, unit)) s.fired[`${unit}:${w}`] = this.#firedKey(s, caps, w, unit);
    }
  }

  /** One turn's tokens (prompt + completion - cached) and cost (nano-dollars; 0 when unpriced), after the turn. */
  charge(projectId: string, endpointId: string, workspaceId: string | null, tokens: number, now: number, costNanos = 0): void {
    if (!(tokens > 0) && !(costNanos > 0)) return;
    this.#chargeState(this.#state('endpoint', projectId, endpointId), tokens, costNanos, now, true);
    if (workspaceId !== null) this.#chargeState(this.#state('workspace', projectId, workspaceId), tokens, costNanos, now, true);
    this.#changes?.charged(projectId, endpointId, workspaceId, tokens, costNanos, now);
  }

  /**
   * A turn another replica served and charged (the bus): the spend counts here too, so this replica
   * refuses once the cap is spent, but the threshold alert is the charging replica's to send. A threshold
   * crossed by a remote charge is marked as sent here, so a later local charge does not send it again.
   */
  applyRemoteCharge(projectId: string, endpointId: string, workspaceId: string | null, tokens: number, at: number, costNanos = 0): void {
    if (!(tokens > 0) && !(costNanos > 0)) return;
    this.#chargeState(this.#state('endpoint', projectId, endpointId), tokens, costNanos, at, false);
    if (workspaceId !== null) this.#chargeState(this.#state('workspace', projectId, workspaceId), tokens, costNanos, at, false);
  }

  /** The request path: null (nothing to say) unless a budget of the endpoint or workspace is near or at its cap. */
  check(projectId: string, endpointId: string, workspaceId: string | null, now: number): BudgetVerdict | null {
    if (this.#capped === 0) return null;
    const warnings: string[] = [];
    let exhausted: BudgetExhaustion | null = null;
    const states = [this.#find('endpoint', projectId, endpointId)];
    if (workspaceId !== null) states.push(this.#find('workspace', projectId, workspaceId));
    for (const s of states) {
      const caps = s ? effectiveCaps(s) : null;
      if (!s || !caps) continue;
      this.#roll(s, now);
      for (const w of BUDGET_WINDOWS) {
        let warned = false;
        for (const unit of BUDGET_UNITS) {
          const cap = capMeasure(caps, w, unit);
          if (cap === null) continue;
          const spent = spentIn(s, w, unit);
          // One warning per window, whichever of its caps is near.
          if (!warned && reachesWarning(spent, cap)) {
            warnings.push(`${s.level}:${w}`);
            warned = true;
          }
          if (spent >= cap) {
            // The first budget spent names the error; the wait covers every spent budget.
            const wait = Math.max(retryAfter(w, now), exhausted?.retryAfterSeconds ?? 0);
            const named: BudgetExhaustion = exhausted ?? { level: s.level, window: w, unit, cap: capOf(caps, w, unit) ?? 0, spent: asWritten(spent, unit), resetsInSeconds: retryAfter(w, now), retryAfterSeconds: wait };
            exhausted = { ...named, retryAfterSeconds: wait };
          }
        }
      }
    }
    if (warnings.length === 0) return null;
    return { warning: warnings.join(', '), exhausted };
  }

  describe(level: BudgetLevel, projectId: string, targetId: string, now: number): BudgetDescription {
    const s = this.#find(level, projectId, targetId);
    if (!s) return { caps: null, source: null, spend: NO_SPEND, spendNanos: NO_SPEND };
    this.#roll(s, now);
    const caps = effectiveCaps(s);
    const source = s.apiCaps !== undefined ? 'api' : s.configCaps ? 'config' : null;
    return {
      caps: caps ?? (s.apiCaps !== undefined ? NO_CAPS : null),
      source,
      spend: { hourly: s.hourly, daily: s.daily, total: s.total },
      spendNanos: { hourly: s.hourlyNanos, daily: s.dailyNanos, total: s.totalNanos },
    };
  }

  #find(level: BudgetLevel, projectId: string, targetId: string): BudgetState | undefined {
    return this.#states[level].get(projectId)?.get(targetId);
  }

  #state(level: BudgetLevel, projectId: string, targetId: string): BudgetState {
    let byTarget = this.#states[level].get(projectId);
    if (!byTarget) this.#states[level].set(projectId, (byTarget = new Map()));
    let s = byTarget.get(targetId);
    if (!s) {
      s = {
        projectId,
        level,
        targetId,
        configCaps: null,
        apiCaps: undefined,
        hourId: 0,
        hourly: 0,
        dayId: 0,
        daily: 0,
        total: 0,
        hourlyNanos: 0,
        dailyNanos: 0,
        totalNanos: 0,
        fired: { 'tokens:hourly': '', 'tokens:daily': '', 'tokens:hardCap': '', 'cents:hourly': '', 'cents:daily': '', 'cents:hardCap': '' },
      };
      byTarget.set(targetId, s);
    }
    return s;
  }

  #update(s: BudgetState, change: (s: BudgetState) => void): void {
    const before = effectiveCaps(s) !== null;
    change(s);
    const after = effectiveCaps(s) !== null;
    this.#capped += Number(after) - Number(before);
  }

  #roll(s: BudgetState, now: number): void {
    const hourId = Math.floor(now / HOUR_MS);
    if (hourId > s.hourId) {
      s.hourId = hourId;
      s.hourly = 0;
      s.hourlyNanos = 0;
    }
    const dayId = Math.floor(now / DAY_MS);
    if (dayId > s.dayId) {
      s.dayId = dayId;
      s.daily = 0;
      s.dailyNanos = 0;
    }
  }

  #chargeState(s: BudgetState, tokens: number, costNanos: number, now: number, alert: boolean): void {
    this.#roll(s, now);
    s.hourly += tokens;
    s.daily += tokens;
    s.total += tokens;
    s.hourlyNanos += costNanos;
    s.dailyNanos += costNanos;
    s.totalNanos += costNanos;
    const caps = effectiveCaps(s);
    if (!caps || !this.#listener) return;
    for (const unit of BUDGET_UNITS) {
      for (const w of BUDGET_WINDOWS) {
        if (!this.#over(s, caps, w, unit)) continue;
        const key = this.#firedKey(s, caps, w, unit);
        if (s.fired[`${unit}:${w}`] === key) continue;
        s.fired[`${unit}:${w}`] = key;
        if (alert) this.#emit(s, caps, w, unit, now);
      }
    }
  }

  #over(s: BudgetState, caps: BudgetCaps, w: BudgetWindow, unit: BudgetUnit): boolean {
    const cap = capMeasure(caps, w, unit);
    return cap !== null && reachesWarning(spentIn(s, w, unit), cap);
  }

  /** Fires again in a new hour or day, or after the cap changed; never twice for the same window and cap. */
  #firedKey(s: BudgetState, caps: BudgetCaps, w: BudgetWindow, unit: BudgetUnit): string {
    const windowId = w === 'hourly' ? s.hourId : w === 'daily' ? s.dayId : 0;
    return `${windowId}/${capOf(caps, w, unit)}`;
  }

  #emit(s: BudgetState, caps: BudgetCaps, w: BudgetWindow, unit: BudgetUnit, now: number): void {
    const cap = capMeasure(caps, w, unit) ?? 0;
    const spent = spentIn(s, w, unit);
    const event: BudgetThresholdEvent = {
      projectId: s.projectId,
      level: s.level,
      targetId: s.targetId,
      window: w,
      unit,
      thresholdPercent: WARNING_PERCENT,
      spent: asWritten(spent, unit),
      cap: capOf(caps, w, unit) ?? 0,
      spendPercentage: cap > 0 ? Math.round((spent / cap) * 10_000) / 100 : 100,
      windowStart: w === 'hourly' ? s.hourId * HOUR_MS : w === 'daily' ? s.dayId * DAY_MS : null,
      at: now,
    };
    try {
      this.#listener?.(event);
    } catch (err) {
      // A failing subscriber must not fail the turn that was being charged.
      this.#onListenerError(err);
    }
  }
}

function effectiveCaps(s: BudgetState): BudgetCaps | null {
  const caps = s.apiCaps !== undefined ? s.apiCaps : s.configCaps;
  return hasCap(caps) ? caps : null;
}

/** Tokens, or nano-dollars. */
function spentIn(s: BudgetState, w: BudgetWindow, unit: BudgetUnit): number {
  if (unit === 'tokens') return w === 'hourly' ? s.hourly : w === 'daily' ? s.daily : s.total;
  return w === 'hourly' ? s.hourlyNanos : w === 'daily' ? s.dailyNanos : s.totalNanos;
}
