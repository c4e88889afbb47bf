/**
 * `switchboard usage`: the usage and spend totals of one project, read from the store a gateway serves
 * through the same query as `GET /{project}/v1/management/usage` (store/usage/usage-reads.ts), printed as a
 * table (or, with --json, as the API's list). It only reads: a store that does not exist is refused, never
 * created (exit 2). With a config whose `storage.kind` is postgres (and no --db) it reads PostgreSQL, the
 * ledger every replica writes (issue 12).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError, isoTimestamp, loadConfigFile, type Config } from './config.js';
import { parseFlags, UsageError } from './cli-flags.js';
import { formatUsd } from './core/usage/cost.js';
import { usageResultWire } from './routes/management-usage.js';
import { DEFAULT_USAGE_RANGE_S } from './schemas/management-usage.js';
import { openDatabase } from './store/db.js';
import { isPostgresCompanion } from './store/store-kind-mark.js';
import { createPgUsageStore } from './store/postgres/usage-store.js';
import { createSqliteCatalog } from './store/catalog/sqlite-catalog.js';
import { DAY_MS, USAGE_GROUPS, type UsageGroupBy, type UsageTotals } from './core/store/usage-store.js';
import { createSqliteUsageReads } from './store/usage/sqlite-usage-reads.js';
import { withCliPostgres, type CliPostgres } from './cli-postgres.js';

export const USAGE_USAGE = `  switchboard usage --project ID (--config FILE | --db PATH) [--since 24h|7d|ISO8601|UNIX_SECONDS]
                    [--until ISO8601|UNIX_SECONDS] [--group-by ${USAGE_GROUPS.join('|')}] [--json]`;

const DURATION = /^(\d{1,9})([mhd])$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: DAY_MS } as const;
const TIME_RULE = 'must be a duration back from now (30m, 24h, 7d), an ISO 8601 time with a zone, or Unix seconds';

/** A point in time, in Unix ms: `24h` (before now), an ISO 8601 time, or Unix seconds. */
function timeFlag(durationAllowed: boolean) {
  return z.string().superRefine((s, ctx) => {
    const ok = (durationAllowed && DURATION.test(s)) || /^\d{1,12}$/.test(s) || isoTimestamp.safeParse(s).success;
    if (!ok) ctx.addIssue({ code: 'custom', message: durationAllowed ? TIME_RULE : TIME_RULE.replace('a duration back from now (30m, 24h, 7d), ', '') });
  });
}

function toMs(flag: string, now: number): number {
  const d = DURATION.exec(flag);
  if (d) return now - Number(d[1]) * UNIT_MS[d[2] as keyof typeof UNIT_MS];
  if (/^\d+$/.test(flag)) return Number(flag) * 1000;
  return Date.parse(flag);
}

export async function usageCommand(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    {
      project: { type: 'string' },
      config: { type: 'string' },
      db: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      'group-by': { type: 'string' },
      json: { type: 'boolean' },
    },
    z.object({
      project: z.string({ error: 'is required: the project id (proj_...)' }),
      config: z.string().optional(),
      db: z.string().optional(),
      since: timeFlag(true).optional(),
      until: timeFlag(false).optional(),
      'group-by': z.enum(USAGE_GROUPS, `must be one of ${USAGE_GROUPS.join(', ')}`).default('day'),
      json: z.boolean().optional(),
    }),
  );
  if (!flags.config && !flags.db) throw new UsageError('--config or --db is required: the store to read the usage from');
  const now = Date.now();
  // The API's range: [since, until), until defaulting to the end of this second, since to 24 h before it.
  const end = flags.until !== undefined ? toMs(flags.until, now) : (Math.floor(now / 1000) + 1) * 1000;
  const start = flags.since !== undefined ? toMs(flags.since, now) : end - DEFAULT_USAGE_RANGE_S * 1000;
  if (end <= start) throw new UsageError(`--until must be after --since (${new Date(start).toISOString()})`);

  const config = flags.config ? loadConfigFile(flags.config) : null;
  const range = { start, end, groupBy: flags['group-by'] };
  const pgUrl = flags.db === undefined && config?.storage.kind === 'postgres' ? config.storage.url : undefined;
  let items: UsageTotals[];
  let labels: EndpointLabels;
  if (config && pgUrl !== undefined) {
    // The projects come from the config file (synced into each replica's store at start).
    if (!config.projects.some((p) => p.id === flags.project)) throw new ConfigError(`--project: no project ${flags.project} in ${flags.config ?? ''}`);
    items = await readPgTotals({ url: pgUrl, from: `storage.url in ${flags.config ?? ''}` }, flags.project, range);
    labels = configEndpointLabels(config);
  } else {
    const store = flags.db !== undefined ? { path: flags.db, from: '--db' } : { path: config?.storage.path ?? '', from: `storage.path in ${flags.config ?? ''}` };
    items = readTotals(store, flags.project, range);
    labels = sqliteEndpointLabels(store.path);
  }
  if (flags.json) {
    const data = items.map((t) => usageResultWire(flags['group-by'], t));
    process.stdout.write(`${JSON.stringify({ object: 'list', group_by: flags['group-by'], start_time: Math.floor(start / 1000), end_time: Math.ceil(end / 1000), data, has_more: false }, null, 2)}\n`);
    return;
  }
  process.stderr.write(`usage of ${flags.project} from ${iso(start)} to ${iso(end)}, by ${flags['group-by']}:\n`);
  process.stdout.write(`${usageTable(flags['group-by'], items, labels)}\n`);
}

function readTotals(store: { path: string; from: string }, projectId: string, range: { start: number; end: number; groupBy: UsageGroupBy }): UsageTotals[] {
  if (store.path === ':memory:') throw new ConfigError(`${store.from} is ":memory:", a store private to the gateway's process: usage cannot read it`);
  if (!existsSync(store.path)) {
    throw new ConfigError(`${store.from}: no database at ${resolve(store.path)}; usage reads an existing store and never creates one (check the path)`);
  }
  const db = openDatabase(store.path);
  try {
    if (isPostgresCompanion(db)) {
      throw new ConfigError(
        `${store.from}: ${resolve(store.path)} is the own file of a gateway whose storage.kind is postgres; its usage ledger is in PostgreSQL, shared by the replicas, not in this file. Read it with --config <that gateway's config file> instead of --db`,
      );
    }
    if (!createSqliteCatalog(db).snapshot().projects.some((p) => p.id === projectId)) throw new ConfigError(`--project: no project ${projectId} in ${store.path}`);
    return createSqliteUsageReads(db).page({ projectId, start: range.start, end: range.end, groupBy: range.groupBy, limit: null, after: null }).items;
  } finally {
    db.close();
  }
}

/** Slug and name of each endpoint of the store's projects, for the table's ENDPOINT column (ids are UUIDs). */
function sqliteEndpointLabels(path: string): EndpointLabels {
  const db = openDatabase(path);
  try {
    const rows = db.prepare<[], { id: string; slug: string; name: string }>('SELECT id, slug, name FROM endpoints').all();
    return new Map(rows.map((r) => [r.id, { slug: r.slug, name: r.name }]));
  } finally {
    db.close();
  }
}

function configEndpointLabels(config: Config): EndpointLabels {
  return new Map(config.projects.flatMap((p) => p.endpoints.map((e) => [e.id, { slug: e.slug, name: e.name }] as const)));
}

async function readPgTotals(postgres: CliPostgres, projectId: string, range: { start: number; end: number; groupBy: UsageGroupBy }): Promise<UsageTotals[]> {
  return withCliPostgres(postgres, false, 'usage', ['usage', 'reads'], async (pg) => {
    const page = await createPgUsageStore(pg).page({ projectId, start: range.start, end: range.end, groupBy: range.groupBy, limit: null, after: null });
    return page.items;
  });
}

const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

const GROUP_HEADERS: Record<UsageGroupBy, string> = { day: 'DAY', key: 'KEY', endpoint: 'ENDPOINT', model: 'MODEL', workspace: 'WORKSPACE' };

/** Endpoint id to its slug and name. */
export type EndpointLabels = ReadonlyMap<string, { readonly slug: string; readonly name: string }>;

function groupCell(groupBy: UsageGroupBy, group: UsageTotals['group'], labels: EndpointLabels): string {
  if (group === null) return '(none)';
  if (groupBy === 'endpoint') return labels.get(String(group))?.slug ?? String(group);
  return groupBy === 'day' ? iso(Number(group)).slice(0, 10) : String(group);
}

/**
 * One line per group and a TOTAL line, aligned: numbers to the right. Cost "-": no priced turn. Endpoints
 * by slug, with their name last (a deleted endpoint's row keeps its id).
 */
export function usageTable(groupBy: UsageGroupBy, items: readonly UsageTotals[], labels: EndpointLabels = new Map()): string {
  const byEndpoint = groupBy === 'endpoint';
  const nameOf = (group: UsageTotals['group']): string[] => (byEndpoint ? [group === null ? '' : (labels.get(String(group))?.name ?? '')] : []);
  const cells = (t: Omit<UsageTotals, 'group'>, name: string, extra: string[]): string[] => [
    name,
    String(t.requests),
    String(t.promptTokens),
    String(t.completionTokens),
    String(t.promptTokens + t.completionTokens),
    String(t.cachedTokens),
    String(t.reasoningTokens),
    t.costNanos === null ? '-' : formatUsd(t.costNanos),
    String(t.unpricedRequests),
    ...extra,
  ];
  const sum = (pick: (t: UsageTotals) => number): number => items.reduce((acc, t) => acc + pick(t), 0);
  const priced = items.filter((t) => t.costNanos !== null);
  const total = {
    requests: sum((t) => t.requests),
    promptTokens: sum((t) => t.promptTokens),
    completionTokens: sum((t) => t.completionTokens),
    cachedTokens: sum((t) => t.cachedTokens),
    reasoningTokens: sum((t) => t.reasoningTokens),
    costNanos: priced.length === 0 ? null : priced.reduce((acc, t) => acc + (t.costNanos ?? 0n), 0n),
    unpricedRequests: sum((t) => t.unpricedRequests),
  };
  const rows = [
    [GROUP_HEADERS[groupBy], 'REQUESTS', 'PROMPT', 'COMPLETION', 'TOTAL', 'CACHED', 'REASONING', 'COST_USD', 'UNPRICED', ...(byEndpoint ? ['NAME'] : [])],
    ...items.map((t) => cells(t, groupCell(groupBy, t.group, labels), nameOf(t.group))),
    cells(total, 'TOTAL', byEndpoint ? [''] : []),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  const left = (i: number): boolean => i === 0 || (byEndpoint && i === widths.length - 1);
  return rows.map((r) => r.map((cell, i) => (left(i) ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ').trimEnd()).join('\n');
}
