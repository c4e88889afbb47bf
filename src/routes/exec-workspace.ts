/**
 * The workspace an execution request names (docs/exec.md validation order, SPEC "Execution surface
 * errors"): 400 `missing_workspace_id`, 400 `invalid_workspace_id` (ws_<hex> only: UUIDs are refused on
 * operator surfaces), 403 `project_mismatch` for a workspace of another project (SPEC's error table),
 * 404 `workspace_not_found`; then a key confined to other workspaces gets 403
 * `workspace_not_allowed` (SPEC Authentication 10).
 */
import { mayUseWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import { describe } from '../core/describe-value.js';
import type { Services } from '../app/services.js';

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requireExecWorkspace(value: unknown, auth: AuthenticatedKey, services: Services, param = 'workspace_id'): string {
  if (value === undefined || value === null || value === '') {
    throw new GatewayError('missing_workspace_id', { param, message: `Name the workspace the tool runs in (${param}, ws_<hex>).` });
  }
  if (typeof value !== 'string' || !WORKSPACE_ID.test(value)) {
    const why = typeof value === 'string' && UUID.test(value) ? 'UUIDs are not accepted here; ' : '';
    throw new GatewayError('invalid_workspace_id', { param, message: `${param} must be a workspace id of the form ws_<hex>; ${why}got ${describe(value)}.` });
  }
  const projectId = auth.project.id;
  if (!services.catalog.workspaces(projectId).has(value)) {
    if (services.catalog.workspaceProject(value) !== null) {
      throw new GatewayError('project_mismatch', { param, message: `Workspace ${value} belongs to another project than the API key's (${projectId}); name a workspace of ${projectId}.` });
    }
    throw new GatewayError('workspace_not_found', { param, message: `Project ${projectId} has no workspace ${value}.` });
  }
  if (!mayUseWorkspace(auth, value)) throw new GatewayError('workspace_not_allowed', { param, message: `The API key may not use workspace ${value}.` });
  return value;
}
