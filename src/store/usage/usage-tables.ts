/**
 * The usage aggregate's tables, declared once for both backends: the ledger (one row per model turn), the
 * journal segments' markers, the hourly spend rollup and the budget caps. Created by SQLite migrations 002,
 * 003, 006, 013, 014 and 018 and PostgreSQL migrations 004 and 011 (history: released migrations are never
 * edited); test/contract/store-schema.test.ts compares this declaration with both live schemas.
 *
 * The rollup is kept in the inserting transaction: on SQLite by the ledger's insert program (one upsert
 * per hour and target a batch, usage-ledger-writes.ts; a per-row trigger before migration 019), on
 * PostgreSQL by its migration's statement-level trigger (one grouped upsert a statement).
 */
import type { BudgetLevel } from '../../core/limits/budget-caps.js';
import type { LedgerRow } from '../../core/store/usage-store.js';
import { generated, integer, maybeText, nullable, real, text, type TablesOf } from '../sql/table-schema.js';

export const USAGE_SCHEMA = {
  usage_events: {
    /** SQLite's INTEGER PRIMARY KEY (the rowid); PostgreSQL's identity. The Requests page's keyset tie-breaker. */
    id: generated(integer()),
    request_id: text(),
    project_id: text(),
    workspace_id: maybeText(),
    endpoint_id: text(),
    key_id: text(),
    route: text(),
    prompt_tokens: integer(),
    completion_tokens: integer(),
    cached_tokens: integer(),
    reasoning_tokens: nullable(integer()),
    service_tier: text(),
    tier_multiplier: real(),
    status: text(),
    usage_source: text(),
    latency_ms: real(),
    created_at: integer(),
    model: maybeText(),
    /** Nano-dollars; NULL when the endpoint had no price. */
    cost_nanos: nullable(integer()),
    ttft_ms: nullable(real()),
    error_code: maybeText(),
    upstream_server: maybeText(),
    retries: nullable(integer()),
  },
  usage_journal_segments: {
    segment: text(),
  },
  usage_spend_hourly: {
    project_id: text(),
    endpoint_id: text(),
    /** '' for a turn without a workspace (a primary key column cannot be NULL). */
    workspace_id: text(),
    hour_start: integer(),
    tokens: integer(),
    nanos: integer(),
  },
  budgets: {
    project_id: text(),
    level: text<BudgetLevel>(),
    target_id: text(),
    hourly_tokens: nullable(integer()),
    daily_tokens: nullable(integer()),
    hard_cap_tokens: nullable(integer()),
    hourly_cents: nullable(integer()),
    daily_cents: nullable(integer()),
    hard_cap_cents: nullable(integer()),
    updated_at: integer(),
  },
} as const;

export type UsageTables = TablesOf<typeof USAGE_SCHEMA>;

type LedgerColumn = Exclude<keyof typeof USAGE_SCHEMA.usage_events, 'id'>;

/**
 * Each field of a stored row and its ledger column, in the order the journal's lines hold them
 * (usage-journal.ts): the one list the insert of both backends is generated from.
 */
export const LEDGER_COLUMNS = {
  requestId: 'request_id',
  projectId: 'project_id',
  workspaceId: 'workspace_id',
  endpointId: 'endpoint_id',
  keyId: 'key_id',
  route: 'route',
  promptTokens: 'prompt_tokens',
  completionTokens: 'completion_tokens',
  cachedTokens: 'cached_tokens',
  reasoningTokens: 'reasoning_tokens',
  serviceTier: 'service_tier',
  tierMultiplier: 'tier_multiplier',
  status: 'status',
  usageSource: 'usage_source',
  latencyMs: 'latency_ms',
  createdAt: 'created_at',
  model: 'model',
  costNanos: 'cost_nanos',
  ttftMs: 'ttft_ms',
  errorCode: 'error_code',
  upstreamServer: 'upstream_server',
  retries: 'retries',
} as const satisfies Record<keyof LedgerRow, LedgerColumn>;

/** The row's fields in LEDGER_COLUMNS order. */
export const USAGE_COLUMNS = Object.keys(LEDGER_COLUMNS) as readonly (keyof LedgerRow)[];
