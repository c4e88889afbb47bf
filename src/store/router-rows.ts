/**
 * Routing decision rows as both backends read them (router/router-decisions.ts): the same column names
 * and types in both schemas, one mapping to the port's record.
 */
import type { StoredDecision } from '../core/store/router-store.js';

export interface DecisionRow {
  request_id: string;
  project_id: string;
  workspace_id: string | null;
  created_at: number;
  route_reason: string;
  query_preview: string;
  detail: string;
}

export const decisionOf = (r: DecisionRow): StoredDecision => ({
  requestId: r.request_id,
  projectId: r.project_id,
  workspaceId: r.workspace_id,
  createdAt: r.created_at,
  routeReason: r.route_reason,
  sealedPreview: r.query_preview,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
});
