/** Endpoints. An endpoint removed from the config file is marked deleted, never erased (usage rows point at it). */
import type { EndpointRecord } from '../core/records.js';
import type { Db } from './db.js';
import { fromJson, fromNullableJson, toJson } from './json-column.js';

export interface EndpointRow {
  id: string;
  project_id: string;
  slug: string;
  name: string;
  kind: EndpointRecord['kind'];
  tier: EndpointRecord['tier'];
  status: EndpointRecord['status'];
  region: string;
  workspace_ids: string;
  model: string;
  upstream: string;
  router: string | null;
  created_at: number;
}

export const toEndpoint = (r: EndpointRow): EndpointRecord => ({
  id: r.id,
  projectId: r.project_id,
  slug: r.slug,
  name: r.name,
  kind: r.kind,
  tier: r.tier,
  status: r.status,
  region: r.region,
  workspaceIds: fromJson<string[]>(r.workspace_ids),
  model: fromJson<EndpointRecord['model']>(r.model),
  upstream: fromJson<EndpointRecord['upstream']>(r.upstream),
  router: fromNullableJson<EndpointRecord['router']>(r.router),
  createdAt: r.created_at,
});

export type EndpointUpsert = Omit<EndpointRecord, 'createdAt'>;

export function createEndpointsRepo(db: Db) {
  const upsert = db.prepare(`
    INSERT INTO endpoints (id, project_id, slug, name, kind, tier, status, region, workspace_ids, model, upstream, router, created_at, updated_at)
    VALUES (@id, @projectId, @slug, @name, @kind, @tier, @status, @region, @workspaceIds, @model, @upstream, @router, @now, @now)
    ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, slug = excluded.slug, name = excluded.name,
      kind = excluded.kind, tier = excluded.tier, status = excluded.status, region = excluded.region,
      workspace_ids = excluded.workspace_ids, model = excluded.model, upstream = excluded.upstream,
      router = excluded.router, updated_at = excluded.updated_at, deleted_at = NULL`);
  const markDeleted = db.prepare(
    'UPDATE endpoints SET deleted_at = @now WHERE project_id = @projectId AND deleted_at IS NULL AND id NOT IN (SELECT value FROM json_each(@keep))',
  );
  const live = db.prepare<[], EndpointRow>('SELECT * FROM endpoints WHERE deleted_at IS NULL ORDER BY created_at, slug');

  return {
    upsert(e: EndpointUpsert, now: number): void {
      upsert.run({
        id: e.id,
        projectId: e.projectId,
        slug: e.slug,
        name: e.name,
        kind: e.kind,
        tier: e.tier,
        status: e.status,
        region: e.region,
        workspaceIds: toJson(e.workspaceIds),
        model: toJson(e.model),
        upstream: toJson(e.upstream),
        router: e.router ? toJson(e.router) : null,
        now,
      });
    },
    /** Marks every live endpoint of the project not in `keepIds` as deleted. */
    deleteOthers(projectId: string, keepIds: readonly string[], now: number): number {
      return markDeleted.run({ projectId, keep: toJson(keepIds), now }).changes;
    },
    listLive: (): EndpointRecord[] => live.all().map(toEndpoint),
  };
}

export type EndpointsRepo = ReturnType<typeof createEndpointsRepo>;
