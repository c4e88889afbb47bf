/**
 * The router's rows as both stores read them (SQLite: sqlite/router-store.ts, PostgreSQL:
 * postgres/router-store.ts): the same column names and types in both schemas, one mapping to the port's records.
 */
import type { EndpointSlo, ModelAlias, StoredDecision } from '../core/store/router-store.js';

export interface DecisionRow {
  request_id: string;
  project_id: string;
  workspace_id: string | null;
  created_at: number;
  route_reason: string;
  query_preview: string;
  detail: string;
}

export interface SloRow {
  project_id: string;
  endpoint_id: string;
  ttft_ms: number | null;
  tpot_ms: number | null;
  created_at: number;
  updated_at: number;
}

export interface AliasRow {
  project_id: string;
  alias: string;
  target: string;
  created_at: number;
  updated_at: number;
}

export const sloOf = (r: SloRow): EndpointSlo => ({
  projectId: r.project_id,
  endpointId: r.endpoint_id,
  ttftMs: r.ttft_ms,
  tpotMs: r.tpot_ms,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const aliasOf = (r: AliasRow): ModelAlias => ({ projectId: r.project_id, alias: r.alias, target: r.target, createdAt: r.created_at, updatedAt: r.updated_at });

export const decisionOf = (r: DecisionRow): StoredDecision => ({
  requestId: r.request_id,
  projectId: r.project_id,
  workspaceId: r.workspace_id,
  createdAt: r.created_at,
  routeReason: r.route_reason,
  sealedPreview: r.query_preview,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
});
