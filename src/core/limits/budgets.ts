/**
 * Token budgets per endpoint and per workspace (docs/decisions.md "Budgets"): an hourly cap (UTC clock
 * hour), a daily cap (UTC day) and a hard cap (all-time spend). Spend is tracked in memory for every
 * endpoint and workspace, charged from the same per-turn event as the token limiter, and rebuilt from the
 * usage ledger at start; caps come from the config file, overridden by the management API.
 *
 * At or above 80% of a cap, responses carry `X-Service-Budget-Warning: <level>:<window>`; a spent cap
 * refuses the next request. Like the token limiter, a turn is charged after it completes, so the turn that
 * crosses a cap finishes and the next request is refused.
 */

export type BudgetLevel = 'endpoint' | 'workspace';
export const BUDGET_WINDOWS = ['hourly', 'daily', 'hardCap'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];

/** A cap of null is no cap in that window. */
export interface BudgetCaps {
  readonly hourlyTokens: number | null;
  readonly dailyTokens: number | null;
  readonly hardCapTokens: number | null;
}

export interface BudgetSpend {
  readonly hourly: number;
  readonly daily: number;
  readonly total: number;
}

/** Fired once per budget window when spend crosses the warning threshold (the webhook hook). */
export interface BudgetThresholdEvent {
  readonly projectId: string;
  readonly level: BudgetLevel;
  /** Endpoint id (UUID) or workspace id (`ws_...`). */
  readonly targetId: string;
  readonly window: BudgetWindow;
  readonly thresholdPercent: number;
  readonly spentTokens: number;
  readonly capTokens: number;
  readonly spendPercentage: number;
  /** Start of the hour or day (Unix ms); null for the hard cap. */
  readonly windowStart: number | null;
  readonly at: number;
}

export interface BudgetExhaustion {
  readonly level: BudgetLevel;
  readonly window: BudgetWindow;
  readonly capTokens: number;
  readonly spentTokens: number;
  /** Until every spent budget of the request has reset. */
  readonly retryAfterSeconds: number;
}

export interface BudgetVerdict {
  /** `endpoint:hourly, workspace:daily`; null when no budget is at its warning threshold. */
  readonly warning: string | null;
  readonly exhausted: BudgetExhaustion | null;
}

export interface BudgetDescription {
  readonly caps: BudgetCaps | null;
  readonly source: 'api' | 'config' | null;
  readonly spend: BudgetSpend;
}

export const WARNING_PERCENT = 80;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** A hard cap never resets by itself: the hour is a polling interval for an operator raising the cap. */
export const HARD_CAP_RETRY_AFTER_SECONDS = 3600;

const NO_CAPS: BudgetCaps = { hourlyTokens: null, dailyTokens: null, hardCapTokens: null };

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
  /** Window id and cap for which the threshold event last fired, per window. */
  fired: Record<BudgetWindow, string>;
}

function hasCap(c: BudgetCaps | null | undefined): boolean {
  return !!c && (c.hourlyTokens !== null || c.dailyTokens !== null || c.hardCapTokens !== null);
}

function capOf(c: BudgetCaps, w: BudgetWindow): number | null {
  return w === 'hourly' ? c.hourlyTokens : w === 'daily' ? c.dailyTokens : c.hardCapTokens;
}

export class Budgets {
  /** By level, project and target: nested maps, so the per-turn charge builds no key string. */
  readonly #states: Record<BudgetLevel, Map<string, Map<string, BudgetState>>> = { endpoint: new Map(), workspace: new Map() };
  /** States with at least one effective cap: zero means the request path returns at once. */
  #capped = 0;
  #listener: ((event: BudgetThresholdEvent) => void) | null = null;
  #onListenerError: (err: unknown) => void = () => undefined;

  /** Sets the threshold callback (main.ts; the webhooks engine turns it into budget.threshold_reached). */
  onBudgetThreshold(listener: ((event: BudgetThresholdEvent) => void) | null, onError?: (err: unknown) => void): void {
    this.#listener = listener;
    if (onError) this.#onListenerError = onError;
  }

  setConfigCaps(level: BudgetLevel, projectId: string, targetId: string, caps: BudgetCaps | null): void {
    this.#update(this.#state(level, projectId, targetId), (s) => (s.configCaps = caps));
  }

  /** `undefined` removes the API override, so the config file's caps apply again. */
  setApiCaps(level: BudgetLevel, projectId: string, targetId: string, caps: BudgetCaps | undefined): void {
    this.#update(this.#state(level, projectId, targetId), (s) => (s.apiCaps = caps));
  }

  /** At start: spend rebuilt from the usage ledger for the current hour, day and all time. */
  loadSpend(level: BudgetLevel, projectId: string, targetId: string, spend: BudgetSpend, now: number): void {
    const s = this.#state(level, projectId, targetId);
    s.hourId = Math.floor(now / HOUR_MS);
    s.dayId = Math.floor(now / DAY_MS);
    s.hourly = spend.hourly;
    s.daily = spend.daily;
    s.total = spend.total;
    // Already past the threshold before this process started: the event was due then, not now.
    const caps = effectiveCaps(s);
    if (caps) for (const w of BUDGET_WINDOWS) if (this.#over(s, caps, w)) s.fired[w] = this.#firedKey(s, caps, w);
  }

  /** One turn's tokens (prompt + completion - cached), after the turn. */
  charge(projectId: string, endpointId: string, workspaceId: string | null, tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    this.#chargeState(this.#state('endpoint', projectId, endpointId), tokens, now);
    if (workspaceId !== null) this.#chargeState(this.#state('workspace', projectId, workspaceId), tokens, now);
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
        const cap = capOf(caps, w);
        if (cap === null) continue;
        const spent = spentIn(s, w);
        if (spent * 100 >= cap * WARNING_PERCENT) warnings.push(`${s.level}:${w}`);
        if (spent >= cap) {
          // The first budget spent names the error; the wait covers every spent budget.
          const wait = Math.max(retryAfter(w, now), exhausted?.retryAfterSeconds ?? 0);
          exhausted = { ...(exhausted ?? { level: s.level, window: w, capTokens: cap, spentTokens: spent }), retryAfterSeconds: wait };
        }
      }
    }
    if (warnings.length === 0) return null;
    return { warning: warnings.join(', '), exhausted };
  }

  describe(level: BudgetLevel, projectId: string, targetId: string, now: number): BudgetDescription {
    const s = this.#find(level, projectId, targetId);
    if (!s) return { caps: null, source: null, spend: { hourly: 0, daily: 0, total: 0 } };
    this.#roll(s, now);
    const caps = effectiveCaps(s);
    const source = s.apiCaps !== undefined ? 'api' : s.configCaps ? 'config' : null;
    return { caps: caps ?? (s.apiCaps !== undefined ? NO_CAPS : null), source, spend: { hourly: s.hourly, daily: s.daily, total: s.total } };
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
        fired: { hourly: '', daily: '', hardCap: '' },
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
    }
    const dayId = Math.floor(now / DAY_MS);
    if (dayId > s.dayId) {
      s.dayId = dayId;
      s.daily = 0;
    }
  }

  #chargeState(s: BudgetState, tokens: number, now: number): void {
    this.#roll(s, now);
    s.hourly += tokens;
    s.daily += tokens;
    s.total += tokens;
    const caps = effectiveCaps(s);
    if (!caps || !this.#listener) return;
    for (const w of BUDGET_WINDOWS) {
      if (!this.#over(s, caps, w)) continue;
      const key = this.#firedKey(s, caps, w);
      if (s.fired[w] === key) continue;
      s.fired[w] = key;
      this.#emit(s, caps, w, now);
    }
  }

  #over(s: BudgetState, caps: BudgetCaps, w: BudgetWindow): boolean {
    const cap = capOf(caps, w);
    return cap !== null && spentIn(s, w) * 100 >= cap * WARNING_PERCENT;
  }

  /** Fires again in a new hour or day, or after the cap changed; never twice for the same window and cap. */
  #firedKey(s: BudgetState, caps: BudgetCaps, w: BudgetWindow): string {
    const windowId = w === 'hourly' ? s.hourId : w === 'daily' ? s.dayId : 0;
    return `${windowId}/${capOf(caps, w)}`;
  }

  #emit(s: BudgetState, caps: BudgetCaps, w: BudgetWindow, now: number): void {
    const cap = capOf(caps, w) ?? 0;
    const spent = spentIn(s, w);
    const event: BudgetThresholdEvent = {
      projectId: s.projectId,
      level: s.level,
      targetId: s.targetId,
      window: w,
      thresholdPercent: WARNING_PERCENT,
      spentTokens: spent,
      capTokens: cap,
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

function spentIn(s: BudgetState, w: BudgetWindow): number {
  return w === 'hourly' ? s.hourly : w === 'daily' ? s.daily : s.total;
}

function retryAfter(w: BudgetWindow, now: number): number {
  if (w === 'hardCap') return HARD_CAP_RETRY_AFTER_SECONDS;
  const size = w === 'hourly' ? HOUR_MS : DAY_MS;
  return Math.max(1, Math.ceil(((Math.floor(now / size) + 1) * size - now) / 1000));
}

/** Start of the current UTC hour and day, for rebuilding spend from the ledger. */
export function budgetWindowStarts(now: number): { hourStart: number; dayStart: number } {
  return { hourStart: Math.floor(now / HOUR_MS) * HOUR_MS, dayStart: Math.floor(now / DAY_MS) * DAY_MS };
}
