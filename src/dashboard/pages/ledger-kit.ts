/**
 * What the ledger pages (requests, usage and cost) share: names for the ids the ledger records (a key by
 * its name or prefix, an endpoint by its name and slug, a workspace by its name; an id is shown only when
 * nothing else is known of it, e.g. a key deleted since), a UTC date range read from the query string,
 * and money as the usage API writes it (an exact decimal of the nano-dollars; never a float).
 */
import { DAY_MS } from '../../core/store/usage-store.js';
import { formatUsd } from '../../core/usage/cost.js';
import type { PageDeps } from './page-kit.js';

export interface Labels {
  key(id: string): string;
  endpoint(id: string): string;
  workspace(id: string | null): string;
  /** The project's keys and models, for the filters' choices, by label. */
  readonly keys: readonly { readonly id: string; readonly label: string }[];
  readonly models: readonly string[];
}

export async function projectLabels(deps: PageDeps, projectId: string): Promise<Labels> {
  const keys = (await deps.keys.list(projectId)).map((k) => ({ id: k.id, label: k.name ?? `${k.prefix}…` }));
  const keyNames = new Map(keys.map((k) => [k.id, k.label]));
  const endpoints = deps.catalog.endpoints(projectId);
  const endpointNames = new Map(endpoints.map((e) => [e.id, e.name === e.slug ? e.slug : `${e.name} (${e.slug})`]));
  const workspaces = deps.catalog.workspaces(projectId);
  return {
    key: (id) => keyNames.get(id) ?? id,
    endpoint: (id) => endpointNames.get(id) ?? id,
    workspace: (id) => (id === null ? '—' : (workspaces.get(id)?.name ?? id)),
    keys: keys.sort((a, b) => a.label.localeCompare(b.label)),
    models: [...new Set(endpoints.map((e) => e.model.id))].sort(),
  };
}

/** A range of whole UTC days, `from` and `to` inclusive (as the form's date inputs show them). */
export interface DayRange {
  /** Unix ms of the first day's start. */
  readonly start: number;
  /** Unix ms of the day after the last (exclusive). */
  readonly end: number;
  readonly from: string;
  readonly to: string;
  readonly days: number;
}

const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;
/** A report over more than a year is the usage API's or the CLI's job, not a page's. */
export const MAX_RANGE_DAYS = 366;

const dayOf = (text: string | null): number | null => {
  if (text === null || !ISO_DAY.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) ? null : ms;
};
export const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * The range the query string asks for (`from`, `to`: YYYY-MM-DD, UTC), else the last `defaultDays` days to
 * today. A reversed range is swapped; one longer than MAX_RANGE_DAYS keeps its end and is shortened.
 */
export function dayRange(query: URLSearchParams, now: number, defaultDays: number): DayRange {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  let last = dayOf(query.get('to')) ?? today;
  let first = dayOf(query.get('from')) ?? last - (defaultDays - 1) * DAY_MS;
  if (first > last) [first, last] = [last, first];
  first = Math.max(first, last - (MAX_RANGE_DAYS - 1) * DAY_MS);
  return { start: first, end: last + DAY_MS, from: isoDay(first), to: isoDay(last), days: Math.round((last - first) / DAY_MS) + 1 };
}

/** `$0.000123` or an em dash when unpriced. */
export const money = (nanos: bigint | number | null): string => (nanos === null ? '—' : `$${formatUsd(BigInt(nanos))}`);

/** Milliseconds as shown in tables: whole below 10 s, else seconds with one decimal. */
export const millis = (ms: number | null): string => (ms === null ? '—' : ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
