/**
 * Per-endpoint latency objectives (SLOs, issue 14). Read once per routed turn that has a choice to make
 * (one indexed SELECT of the project's rows); no cache, so every process sharing the file agrees.
 */
import type { EndpointSlo } from '../core/store/router-store.js';
import type { Db } from './db.js';
import { sloOf, type SloRow } from './router-rows.js';

export type { EndpointSlo };

export interface SlosRepo {
  list(projectId: string): EndpointSlo[];
  /** Creates or replaces the endpoint's objectives; returns the stored row. */
  put(projectId: string, endpointId: string, objectives: { ttftMs: number | null; tpotMs: number | null }, now: number): EndpointSlo;
}

export function createSlosRepo(db: Db): SlosRepo {
  const all = db.prepare<[string], SloRow>('SELECT * FROM endpoint_slos WHERE project_id = ? ORDER BY created_at, endpoint_id');
  const upsert = db.prepare<[string, string, number | null, number | null, number, number], SloRow>(`
    INSERT INTO endpoint_slos (project_id, endpoint_id, ttft_ms, tpot_ms, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (project_id, endpoint_id) DO UPDATE SET ttft_ms = excluded.ttft_ms, tpot_ms = excluded.tpot_ms, updated_at = excluded.updated_at
    RETURNING *`);
  return {
    list: (projectId) => all.all(projectId).map(sloOf),
    put: (projectId, endpointId, o, now) => sloOf(upsert.get(projectId, endpointId, o.ttftMs, o.tpotMs, now, now) as SloRow),
  };
}
