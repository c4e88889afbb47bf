/**
 * Budget caps and their windows (docs/decisions.md "Budgets"), as pure arithmetic: an hourly cap (UTC clock
 * hour), a daily cap (UTC day) and a hard cap (all-time spend), each in tokens, in money (US cents of the
 * turns' recorded cost; README "Usage and spend"), or both. What a cap is in each unit, when a spend reaches
 * its warning threshold, and how long until a window resets. The spend itself is budgets.ts's.
 */

import { NANOS_PER_CENT, nanosToCents } from '../usage/cost.js';

export type BudgetLevel = 'endpoint' | 'workspace';
export const BUDGET_WINDOWS = ['hourly', 'daily', 'hardCap'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];
/** Token caps are checked before money caps of the same window: the first spent one names the error. */
export const BUDGET_UNITS = ['tokens', 'cents'] as const;
export type BudgetUnit = (typeof BUDGET_UNITS)[number];

/** A cap of null is no cap in that window. */
export interface BudgetCaps {
  readonly hourlyTokens: number | null;
  readonly dailyTokens: number | null;
  readonly hardCapTokens: number | null;
  /** Money caps in US cents. Optional so that a token-only budget (the management API's wire) needs no nulls. */
  readonly hourlyCents?: number | null;
  readonly dailyCents?: number | null;
  readonly hardCapCents?: number | null;
}

/** Tokens, or nano-dollars. */
export interface BudgetSpend {
  readonly hourly: number;
  readonly daily: number;
  readonly total: number;
}

/** A spent cap, as the 429 names it (budget-errors.ts). */
export interface BudgetExhaustion {
  readonly level: BudgetLevel;
  readonly window: BudgetWindow;
  readonly unit: BudgetUnit;
  /** Tokens, or whole cents (spend rounded halves up) for a money budget. */
  readonly cap: number;
  readonly spent: number;
  /** Until the budget named here resets (a hard cap: the polling interval). */
  readonly resetsInSeconds: number;
  /** Until every spent budget of the request has reset. */
  readonly retryAfterSeconds: number;
}

export const WARNING_PERCENT = 80;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** A hard cap never resets by itself: the hour is a polling interval for an operator raising the cap. */
export const HARD_CAP_RETRY_AFTER_SECONDS = 3600;

export const NO_CAPS: BudgetCaps = { hourlyTokens: null, dailyTokens: null, hardCapTokens: null, hourlyCents: null, dailyCents: null, hardCapCents: null };
export const NO_SPEND: BudgetSpend = { hourly: 0, daily: 0, total: 0 };

/** Whether any window has a cap, in either unit. */
export function hasCap(c: BudgetCaps | null | undefined): boolean {
  if (!c) return false;
  return BUDGET_WINDOWS.some((w) => capOf(c, w, 'tokens') !== null || capOf(c, w, 'cents') !== null);
}

/** The cap as written: tokens, or cents. */
export function capOf(c: BudgetCaps, w: BudgetWindow, unit: BudgetUnit): number | null {
  if (unit === 'tokens') return w === 'hourly' ? c.hourlyTokens : w === 'daily' ? c.dailyTokens : c.hardCapTokens;
  return (w === 'hourly' ? c.hourlyCents : w === 'daily' ? c.dailyCents : c.hardCapCents) ?? null;
}

/** The cap in the unit spend is tracked in: tokens, or nano-dollars. */
export function capMeasure(c: BudgetCaps, w: BudgetWindow, unit: BudgetUnit): number | null {
  const cap = capOf(c, w, unit);
  return cap === null || unit === 'tokens' ? cap : cap * NANOS_PER_CENT;
}

/** At or above WARNING_PERCENT of the cap (both in the tracked unit): responses warn, the webhook fires. */
export function reachesWarning(spent: number, cap: number): boolean {
  return spent * 100 >= cap * WARNING_PERCENT;
}

/** Spend in the unit its cap is written in: tokens, or whole cents. */
export function asWritten(spent: number, unit: BudgetUnit): number {
  return unit === 'tokens' ? spent : nanosToCents(spent);
}

/** Seconds until the window of `now` resets (at least 1); the hard cap's polling interval for it. */
export function retryAfter(w: BudgetWindow, now: number): number {
  if (w === 'hardCap') return HARD_CAP_RETRY_AFTER_SECONDS;
  const size = w === 'hourly' ? HOUR_MS : DAY_MS;
  return Math.max(1, Math.ceil(((Math.floor(now / size) + 1) * size - now) / 1000));
}

/** Start of the current UTC hour and day, for rebuilding spend from the ledger. */
export function budgetWindowStarts(now: number): { hourStart: number; dayStart: number } {
  return { hourStart: Math.floor(now / HOUR_MS) * HOUR_MS, dayStart: Math.floor(now / DAY_MS) * DAY_MS };
}
