/**
 * The usage aggregate's storage port (issue 12): the ledger's rows (one per model turn), the totals the
 * usage API, the dashboard and `switchboard usage` read, the budget caps set through the management API,
 * and the spend the budgets are rebuilt from at start (an hourly rollup kept with the rows, never a scan
 * of the ledger).
 *
 * The request path never calls it: turns are charged in memory (store/charging-ledger.ts) and their rows
 * written in batches off the event loop (the store's writer thread). `storeSegment` is for the journal
 * replay at start and when a sibling died, and for the contract suite.
 */
import type { BudgetCaps, BudgetLevel, BudgetSpend } from '../limits/budget-caps.js';

export interface UsageRow {
  readonly requestId: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly endpointId: string;
  readonly keyId: string;
  readonly route: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number | null;
  readonly serviceTier: string;
  readonly tierMultiplier: number;
  /** completed | aborted | error | timeout */
  readonly status: string;
  readonly usageSource: 'upstream' | 'estimated';
  readonly latencyMs: number;
  readonly createdAt: number;
  /**
   * What the dashboard's Requests page shows of the turn (issue 34); routes that do not know one leave it
   * out. Time to the first byte of a streamed answer, from the request's arrival.
   */
  readonly ttftMs?: number | null;
  /** The catalogue code the client got, for a turn that ended in error or timeout. */
  readonly errorCode?: string | null;
  /** The base URL (no credentials) of the pool's server that answered, or was last tried. */
  readonly upstreamServer?: string | null;
  /** Times the turn was sent once more to another server of the pool (nothing had reached a model). */
  readonly retries?: number | null;
}

declare const billed: unique symbol;

/**
 * A UsageRow made by app/usage-row.ts `usageRow`, the one constructor of the row (issue 33): the only
 * kind the ledger records, so no use case assembles a row by hand. A type-only brand: the row carries
 * nothing more at run time.
 */
export type BilledRow = UsageRow & { readonly [billed]: true };

/**
 * A row as stored: what the charging layer (charging-ledger.ts) adds to the route's row from the config at
 * the moment of the turn.
 */
export interface LedgerRow extends UsageRow {
  /** The endpoint's public model id; null when the endpoint is not in the config (it always is today). */
  readonly model: string | null;
  /** Nano-dollars (core/usage/cost.ts); null when the endpoint has no price. */
  readonly costNanos: number | null;
  // ttftMs, errorCode, upstreamServer, retries: as UsageRow's (absent in rows replayed from older segments).
}

export const USAGE_GROUPS = ['day', 'key', 'endpoint', 'model', 'workspace'] as const;
export type UsageGroupBy = (typeof USAGE_GROUPS)[number];

export const DAY_MS = 86_400_000;

export interface UsageQuery {
  readonly projectId: string;
  /** Unix milliseconds, inclusive. */
  readonly start: number;
  /** Unix milliseconds, exclusive. */
  readonly end: number;
  readonly groupBy: UsageGroupBy;
  /** Groups per page; null: every group (the CLI). */
  readonly limit: number | null;
  /**
   * The `group` of the last item of the previous page, or null for the first page. A null group (no
   * workspace, no model) sorts last, so it is never a cursor: nothing can follow it.
   */
  readonly after: string | number | null;
}

export interface UsageTotals {
  /** day: the UTC day's start (Unix ms); otherwise the key, endpoint, model or workspace id (null: none recorded). */
  readonly group: string | number | null;
  /** Ledger rows: one per model turn (a chat turn, an audio call, a realtime segment). */
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number;
  /** Nano-dollars of the priced rows; null when none of the group's rows had a price. */
  readonly costNanos: bigint | null;
  /** Rows recorded without a price (an endpoint without `prices`, or written before prices existed). */
  readonly unpricedRequests: number;
}

export interface UsagePage {
  readonly items: UsageTotals[];
  readonly hasMore: boolean;
}

/** What the usage API and the dashboard read: a page of totals. */
export interface UsageTotalsSource {
  page(query: UsageQuery): Promise<UsagePage>;
}

export interface StoredBudget {
  readonly projectId: string;
  readonly level: BudgetLevel;
  readonly targetId: string;
  readonly caps: BudgetCaps;
}

export interface SpendRow extends BudgetSpend {
  readonly projectId: string;
  readonly targetId: string;
  /** Nano-dollars of the priced turns. */
  readonly nanos: BudgetSpend;
}

/** The stored budget caps (management budgets API). */
export interface BudgetCapsStore {
  listBudgets(): Promise<StoredBudget[]>;
  putBudget(budget: StoredBudget, now: number): Promise<void>;
  /** False when there was no such budget. */
  removeBudget(projectId: string, level: BudgetLevel, targetId: string): Promise<boolean>;
}

/** Statuses a ledger row may carry (app/chat/chat-dispatch.ts `Outcome`). */
export const REQUEST_STATUSES = ['completed', 'error', 'timeout', 'aborted', 'drained'] as const;

/**
 * A page of one project's ledger rows, newest first (the dashboard's Requests page, issue 34), read with a
 * keyset on (created_at, id) through the project/time index: a page costs its rows, whatever its depth.
 */
export interface RequestsQuery {
  readonly projectId: string;
  /** Unix milliseconds, inclusive. */
  readonly start: number;
  /** Unix milliseconds, exclusive. */
  readonly end: number;
  readonly keyId: string | null;
  readonly model: string | null;
  readonly status: string | null;
  readonly limit: number;
  /** The last row of the previous page; null for the first. */
  readonly before: { readonly createdAt: number; readonly id: number } | null;
}

/** One ledger row as the Requests page shows it: never prompt or answer text (the ledger holds none). */
export interface RequestEntry {
  /** The ledger row's own id (the keyset's tie-breaker and the detail page's address). */
  readonly id: number;
  readonly requestId: string;
  readonly workspaceId: string | null;
  readonly endpointId: string;
  readonly keyId: string;
  readonly route: string;
  readonly model: string | null;
  readonly status: string;
  readonly errorCode: string | null;
  readonly serviceTier: string;
  readonly latencyMs: number;
  readonly ttftMs: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number | null;
  /** Nano-dollars; null when unpriced. */
  readonly costNanos: number | null;
  readonly upstreamServer: string | null;
  readonly retries: number | null;
  readonly createdAt: number;
}

export interface RequestsPage {
  readonly items: RequestEntry[];
  readonly hasMore: boolean;
}

/** The ledger's rows one by one (the totals are UsageTotalsSource's). */
export interface RequestRowsSource {
  requests(query: RequestsQuery): Promise<RequestsPage>;
  /** One row of the project by its ledger id; null when there is none (or it is another project's). */
  request(projectId: string, id: number): Promise<RequestEntry | null>;
}

export interface UsageStore extends UsageTotalsSource, RequestRowsSource, BudgetCapsStore {
  /**
   * Stores a journal segment's rows with its marker, in one transaction: a segment stored twice (a replay
   * racing the writer, two replicas replaying it) is stored once. Returns the rows inserted (0: already
   * stored).
   */
  storeSegment(segment: string, rows: readonly LedgerRow[]): Promise<number>;
  /** Drops the markers of segments whose files are gone (they can never be stored again). */
  forgetSegments(segments: readonly string[]): Promise<void>;
  /** Spend per endpoint or workspace since the hour's and the day's start, and in total (from the hourly rollup). */
  spend(level: BudgetLevel, since: { hourStart: number; dayStart: number }): Promise<SpendRow[]>;
  /** Turns and tokens per endpoint served by the semantic router (route `router`) since `since`, by endpoint id. */
  routedByEndpoint(projectId: string, since: number): Promise<RoutedUsage[]>;
  close(): Promise<void>;
}

export interface RoutedUsage {
  readonly endpoint_id: string;
  readonly requests: number;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}
