/** Projects and their workspaces. Written by config sync (and later the management API). */
import { randomUUID } from 'node:crypto';
import type { ProjectRecord, WorkspaceRecord } from '../core/records.js';
import type { Db } from './db.js';

export interface ProjectRow {
  id: string;
  uuid: string;
  slug: string;
  name: string;
  plan: 'free' | 'paid';
  requests_per_minute: number;
  tokens_per_minute: number;
  default_workspace_id: string | null;
  created_at: number;
}

export interface WorkspaceRow {
  project_id: string;
  id: string;
  name: string;
  routing_mode: 'semantic' | 'concrete' | null;
  routing_mode_default: 'semantic' | 'concrete';
  pinned_endpoint_id: string | null;
  operational: number;
  zero_data_retention: number;
  created_at: number;
}

export const toProject = (r: ProjectRow): ProjectRecord => ({
  id: r.id,
  uuid: r.uuid,
  slug: r.slug,
  name: r.name,
  plan: r.plan,
  requestsPerMinute: r.requests_per_minute,
  tokensPerMinute: r.tokens_per_minute,
  defaultWorkspaceId: r.default_workspace_id,
  createdAt: r.created_at,
});

export const toWorkspace = (r: WorkspaceRow): WorkspaceRecord => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  routingMode: r.routing_mode,
  routingModeDefault: r.routing_mode_default,
  pinnedEndpointId: r.pinned_endpoint_id,
  operational: r.operational === 1,
  zeroDataRetention: r.zero_data_retention === 1,
  createdAt: r.created_at,
});

export interface ProjectUpsert {
  id: string;
  slug: string;
  name: string;
  plan: 'free' | 'paid';
  requestsPerMinute: number;
  tokensPerMinute: number;
  defaultWorkspaceId: string | null;
}

export interface WorkspaceUpsert {
  projectId: string;
  id: string;
  name: string;
  routingMode: 'semantic' | 'concrete' | null;
  zeroDataRetention: boolean;
  operational: boolean;
}

/** New workspaces default to semantic routing (SPEC Semantic router behaviour 9); stamped once at creation. */
export const NEW_WORKSPACE_ROUTING_DEFAULT = 'semantic';

export function createProjectsRepo(db: Db) {
  const upsertProject = db.prepare(`
    INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, default_workspace_id, created_at, updated_at)
    VALUES (@id, @uuid, @slug, @name, @plan, @requestsPerMinute, @tokensPerMinute, @defaultWorkspaceId, @now, @now)
    ON CONFLICT (id) DO UPDATE SET slug = excluded.slug, name = excluded.name, plan = excluded.plan,
      requests_per_minute = excluded.requests_per_minute, tokens_per_minute = excluded.tokens_per_minute,
      default_workspace_id = CASE WHEN projects.default_workspace_set_at IS NULL THEN excluded.default_workspace_id ELSE projects.default_workspace_id END,
      updated_at = excluded.updated_at`);
  const upsertWorkspace = db.prepare(`
    INSERT INTO workspaces (project_id, id, name, routing_mode, routing_mode_default, zero_data_retention, operational, created_at)
    VALUES (@projectId, @id, @name, @routingMode, '${NEW_WORKSPACE_ROUTING_DEFAULT}', @zdr, @operational, @now)
    ON CONFLICT (project_id, id) DO UPDATE SET name = excluded.name,
      routing_mode = CASE WHEN workspaces.routing_mode_set_at IS NULL THEN excluded.routing_mode ELSE workspaces.routing_mode END,
      zero_data_retention = excluded.zero_data_retention, operational = excluded.operational, deleted_at = NULL`);
  const allProjects = db.prepare<[], ProjectRow>('SELECT * FROM projects');
  const liveWorkspaces = db.prepare<[], WorkspaceRow>('SELECT * FROM workspaces WHERE deleted_at IS NULL ORDER BY created_at, id');

  return {
    upsertProject(p: ProjectUpsert, now: number): void {
      upsertProject.run({ ...p, uuid: randomUUID(), now });
    },
    upsertWorkspace(w: WorkspaceUpsert, now: number): void {
      upsertWorkspace.run({ projectId: w.projectId, id: w.id, name: w.name, routingMode: w.routingMode, zdr: w.zeroDataRetention ? 1 : 0, operational: w.operational ? 1 : 0, now });
    },
    listProjects: (): ProjectRecord[] => allProjects.all().map(toProject),
    listWorkspaces: (): WorkspaceRecord[] => liveWorkspaces.all().map(toWorkspace),
  };
}

export type ProjectsRepo = ReturnType<typeof createProjectsRepo>;
