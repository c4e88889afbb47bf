/**
 * Workspace routing fields written through the management API (SPEC Semantic router behaviour 9,
 * Authentication 10), in one transaction per request. Each write stamps `*_set_at`, which tells config
 * sync to leave the value alone from then on; the caller reloads the catalog afterwards (it is the
 * in-process writer).
 */
import type { WorkspaceChange } from '../core/store/router-store.js';
import { writeTransaction, type Db } from './db.js';

export type { WorkspaceChange };

export interface WorkspaceRoutingRepo {
  apply(projectId: string, workspaceId: string, change: WorkspaceChange, now: number): void;
}

export function createWorkspaceRoutingRepo(db: Db): WorkspaceRoutingRepo {
  const mode = db.prepare('UPDATE workspaces SET routing_mode = ?, routing_mode_set_at = ? WHERE project_id = ? AND id = ?');
  const pin = db.prepare('UPDATE workspaces SET pinned_endpoint_id = ? WHERE project_id = ? AND id = ?');
  const makeDefault = db.prepare('UPDATE projects SET default_workspace_id = ?, default_workspace_set_at = ?, updated_at = ? WHERE id = ?');
  const dropDefault = db.prepare(
    'UPDATE projects SET default_workspace_id = NULL, default_workspace_set_at = ?, updated_at = ? WHERE id = ? AND default_workspace_id = ?',
  );
  const apply = writeTransaction(db, (projectId: string, workspaceId: string, change: WorkspaceChange, now: number) => {
    if (change.routingMode !== undefined) mode.run(change.routingMode, now, projectId, workspaceId);
    if (change.pinnedEndpointId !== undefined) pin.run(change.pinnedEndpointId, projectId, workspaceId);
    if (change.isDefault === true) makeDefault.run(workspaceId, now, now, projectId);
    if (change.isDefault === false) dropDefault.run(now, now, projectId, workspaceId);
  });
  return { apply: (projectId, workspaceId, change, now) => apply(projectId, workspaceId, change, now) };
}
