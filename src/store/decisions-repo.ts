/**
 * Reads of the routing decision rows (written by decision-log.ts). The prompt excerpt is opened here; a
 * row sealed under another key (a lost or rotated key file) reads as an empty preview, never an error
 * (SPEC "Routing decision row": empty if undecryptable).
 */
import type { Db } from './db.js';
import type { SecretBox } from './secret-box.js';

export interface DecisionsRepo {
  /** Newest first, within [since, now]. */
  list(projectId: string, since: number, limit: number): Record<string, unknown>[];
  countsByReason(projectId: string, since: number): Map<string, number>;
  /** Turns and tokens per endpoint served by the router since `since` (usage ledger rows with route `router`). */
  usageByEndpoint(projectId: string, since: number): { endpoint_id: string; requests: number; prompt_tokens: number; completion_tokens: number }[];
}

interface Row {
  request_id: string;
  workspace_id: string | null;
  created_at: number;
  route_reason: string;
  query_preview: string;
  detail: string;
}

export function createDecisionsRepo(db: Db, box: SecretBox): DecisionsRepo {
  const list = db.prepare<[string, number, number], Row>(`
    SELECT request_id, workspace_id, created_at, route_reason, query_preview, detail FROM routing_decisions
    WHERE project_id = ? AND created_at >= ? ORDER BY created_at DESC, rowid DESC LIMIT ?`);
  const counts = db.prepare<[string, number], { route_reason: string; n: number }>(
    'SELECT route_reason, COUNT(*) AS n FROM routing_decisions WHERE project_id = ? AND created_at >= ? GROUP BY route_reason',
  );
  const usage = db.prepare<[string, number], { endpoint_id: string; requests: number; prompt_tokens: number; completion_tokens: number }>(`
    SELECT endpoint_id, COUNT(*) AS requests, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens
    FROM usage_events WHERE project_id = ? AND route = 'router' AND created_at >= ? GROUP BY endpoint_id ORDER BY endpoint_id`);

  const open = (r: Row): string => {
    if (r.query_preview === '') return '';
    try {
      return box.open(r.query_preview, r.request_id);
    } catch {
      return '';
    }
  };

  return {
    list: (projectId, since, limit) =>
      list.all(projectId, since, limit).map((r) => ({
        decision_request_id: r.request_id,
        timestamp: new Date(r.created_at).toISOString(),
        workspace_id: r.workspace_id,
        query_preview: open(r),
        route_reason: r.route_reason,
        ...(JSON.parse(r.detail) as Record<string, unknown>),
      })),
    countsByReason: (projectId, since) => new Map(counts.all(projectId, since).map((r) => [r.route_reason, r.n])),
    usageByEndpoint: (projectId, since) => usage.all(projectId, since),
  };
}
