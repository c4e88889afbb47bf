/**
 * Per-endpoint latency objectives (SLOs, issue 14). Read once per routed turn that has a choice to make
 * (one indexed SELECT of the project's rows); no cache, so every process sharing the file agrees.
 */
import type { EndpointSlo } from '../core/store/router-store.js';
import type { Db } from './db.js';

export type { EndpointSlo };

export interface SlosRepo {
  list(projectId: string): EndpointSlo[];
  /** Creates or replaces the endpoint's objectives; returns the stored row. */
  put(projectId: string, endpointId: string, objectives: { ttftMs: number | null; tpotMs: number | null }, now: number): EndpointSlo;
}

interface Row {
  project_id: string;
  endpoint_id: string;
  ttft_ms: number | null;
  tpot_ms: number | null;
  created_at: number;
  updated_at: number;
}

const toSlo = (r: Row): EndpointSlo => ({
  projectId: r.project_id,
  endpointId: r.endpoint_id,
  ttftMs: r.ttft_ms,
  tpotMs: r.tpot_ms,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export function createSlosRepo(db: Db): SlosRepo {
  const all = db.prepare<[string], Row>('SELECT * FROM endpoint_slos WHERE project_id = ? ORDER BY created_at, endpoint_id');
  const upsert = db.prepare<[string, string, number | null, number | null, number, number], Row>(`
    INSERT INTO endpoint_slos (project_id, endpoint_id, ttft_ms, tpot_ms, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (project_id, endpoint_id) DO UPDATE SET ttft_ms = excluded.ttft_ms, tpot_ms = excluded.tpot_ms, updated_at = excluded.updated_at
    RETURNING *`);
  return {
    list: (projectId) => all.all(projectId).map(toSlo),
    put: (projectId, endpointId, o, now) => toSlo(upsert.get(projectId, endpointId, o.ttftMs, o.tpotMs, now, now) as Row),
  };
}
