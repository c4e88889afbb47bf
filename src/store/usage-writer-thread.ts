/**
 * The usage ledger's writer thread: owns its own SQLite connection (synchronous=NORMAL, see db.ts) and
 * writes each batch it receives in one transaction, so neither the insert CPU nor any fsync ever runs on
 * the event loop. `request_id` is unique: a re-sent batch cannot double-bill.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from './db.js';
import type { UsageRow } from './usage-ledger.js';

export type WriterMessage = { readonly kind: 'rows'; readonly rows: readonly UsageRow[] } | { readonly kind: 'close' };
export type WriterReply = { readonly kind: 'written'; readonly count: number } | { readonly kind: 'failed'; readonly message: string; readonly rows: readonly UsageRow[] } | { readonly kind: 'closed' };

const COLUMNS = [
  'requestId', 'projectId', 'workspaceId', 'endpointId', 'keyId', 'route', 'promptTokens', 'completionTokens',
  'cachedTokens', 'reasoningTokens', 'serviceTier', 'tierMultiplier', 'status', 'usageSource', 'latencyMs', 'createdAt',
] as const satisfies readonly (keyof UsageRow)[];

if (parentPort) {
  const port = parentPort;
  const db = openDatabase((workerData as { path: string }).path, 'NORMAL');
  const insert = db.prepare(`
    INSERT OR IGNORE INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens,
      completion_tokens, cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at)
    VALUES (${COLUMNS.map(() => '?').join(', ')})`);
  const insertAll = db.transaction((rows: readonly UsageRow[]) => {
    for (const row of rows) insert.run(COLUMNS.map((c) => row[c]));
  });
  port.on('message', (message: WriterMessage) => {
    if (message.kind === 'close') {
      db.close();
      port.postMessage({ kind: 'closed' } satisfies WriterReply);
      return;
    }
    try {
      insertAll(message.rows);
      port.postMessage({ kind: 'written', count: message.rows.length } satisfies WriterReply);
    } catch (err) {
      port.postMessage({ kind: 'failed', message: (err as Error).message, rows: message.rows } satisfies WriterReply);
    }
  });
}
