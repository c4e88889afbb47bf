/**
 * The usage ledger: one row per turn, written in batches (one transaction every FLUSH_MS or BATCH_MAX
 * rows) so the hot path never waits on a disk write. `request_id` is unique, so a turn is recorded at
 * most once even if a caller retried the insert. A crash loses at most the rows of the last FLUSH_MS.
 */
import type { Db } from './db.js';

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
}

export interface UsageLedger {
  record(row: UsageRow): void;
  /** Writes what is queued now; used at shutdown and by tests. */
  flush(): void;
  close(): void;
}

const FLUSH_MS = 50;
const BATCH_MAX = 512;

export function createUsageLedger(db: Db, onError: (err: unknown) => void): UsageLedger {
  const insert = db.prepare(`
    INSERT OR IGNORE INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens,
      completion_tokens, cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at)
    VALUES (@requestId, @projectId, @workspaceId, @endpointId, @keyId, @route, @promptTokens, @completionTokens, @cachedTokens,
      @reasoningTokens, @serviceTier, @tierMultiplier, @status, @usageSource, @latencyMs, @createdAt)`);
  const insertAll = db.transaction((rows: readonly UsageRow[]) => {
    for (const row of rows) insert.run(row);
  });
  let queue: UsageRow[] = [];
  let timer: NodeJS.Timeout | null = null;

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queue.length === 0) return;
    const rows = queue;
    queue = [];
    try {
      insertAll(rows);
    } catch (err) {
      // Keep the rows for the next attempt rather than dropping billing data.
      queue = rows.concat(queue);
      onError(err);
    }
  }

  return {
    record(row) {
      queue.push(row);
      if (queue.length >= BATCH_MAX) flush();
      else timer ??= setTimeout(flush, FLUSH_MS);
    },
    flush,
    close: flush,
  };
}
