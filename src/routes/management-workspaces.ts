/**
 * `/{project}/v1/management/workspaces/{workspace_id}` GET and PATCH: a workspace's routing fields (SPEC
 * Semantic router behaviour 1 and 9, Authentication 10). SPEC shows no workspace resource; the shape is
 * ours (docs/decisions.md). Management scope and rate limit, 16 KiB bodies.
 */
import { targetProblem } from '../core/routing/rule-set.js';
import type { ProjectRecord, WorkspaceRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseWorkspacePatch, type WorkspacePatch } from '../schemas/workspace-routing.js';
import type { WorkspaceChange } from '../core/store/router-store.js';
import type { WorkspaceRouting } from '../router/router-system.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

export interface WorkspaceManagementServices extends Services {
  readonly workspaceRouting: WorkspaceRouting;
}

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;

export function workspaceWire(w: WorkspaceRecord, project: ProjectRecord) {
  return {
    id: w.id,
    object: 'workspace' as const,
    name: w.name,
    inference_routing_mode: w.routingMode,
    inference_routing_mode_default: w.routingModeDefault,
    effective_routing_mode: w.routingMode ?? w.routingModeDefault,
    inference_endpoint_id: w.pinnedEndpointId,
    operational: w.operational,
    is_default: project.defaultWorkspaceId === w.id,
    zero_data_retention: w.zeroDataRetention,
    created_at: Math.floor(w.createdAt / 1000),
  };
}

export function managementWorkspacesRoutes(services: WorkspaceManagementServices): RouteDef[] {
  const { catalog } = services;
  const find = (ctx: RouteContext, projectId: string): WorkspaceRecord => {
    const id = ctx.req.params.workspace ?? '';
    if (!WORKSPACE_ID.test(id)) {
      throw new GatewayError('invalid_workspace_id', { param: 'workspace_id', message: `${JSON.stringify(id.slice(0, 40))} is not a workspace id: workspace ids have the form ws_<hex>.` });
    }
    const w = catalog.workspaces(projectId).get(id);
    if (!w) throw new GatewayError('workspace_not_found', { param: 'workspace_id', message: `Project ${projectId} has no workspace ${id}.` });
    return w;
  };
  const route = (method: RouteDef['method'], handle: (ctx: RouteContext, project: ProjectRecord) => Promise<void> | void): RouteDef =>
    keyed(services, 'management', {
      method,
      pattern: '/:project/v1/management/workspaces/:workspace',
      family: 'management',
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle: (ctx, auth) => handle(ctx, auth.project),
    });

  function changeOf(projectId: string, w: WorkspaceRecord, patch: WorkspacePatch): WorkspaceChange {
    const change: { -readonly [K in keyof WorkspaceChange]: WorkspaceChange[K] } = {};
    if (patch.inference_routing_mode !== undefined) {
      change.routingMode = patch.inference_routing_mode;
      // SPEC behaviour 9: semantic or null also drops the pinned inference endpoint.
      if (patch.inference_routing_mode !== 'concrete') change.pinnedEndpointId = null;
    }
    if (patch.inference_endpoint_id !== undefined) {
      const id = patch.inference_endpoint_id;
      if (id !== null) {
        const problem = targetProblem(id, catalog.endpoints(projectId));
        if (problem) throw new GatewayError('invalid_request', { param: 'inference_endpoint_id', message: `inference_endpoint_id ${problem}.` });
        if (!catalog.endpoints(projectId).some((e) => e.id === id && e.workspaceIds.includes(w.id))) {
          throw new GatewayError('invalid_request', { param: 'inference_endpoint_id', message: `inference_endpoint_id names an endpoint that does not serve workspace ${w.id}.` });
        }
      }
      change.pinnedEndpointId = id;
    }
    if (patch.is_default === true && w.operational) {
      throw new GatewayError('operational_default_forbidden', {
        param: 'is_default',
        message: `Workspace ${w.id} is an operational workspace and cannot be the project's default workspace.`,
      });
    }
    if (patch.is_default !== undefined) change.isDefault = patch.is_default;
    return change;
  }

  return [
    route('GET', (ctx, project) => {
      ctx.reply.json(200, workspaceWire(find(ctx, project.id), project));
    }),
    route('PATCH', async (ctx, project) => {
      const w = find(ctx, project.id);
      const change = changeOf(project.id, w, parseWorkspacePatch(await ctx.req.json()));
      await services.workspaceRouting.apply(project.id, w.id, change, services.now());
      // With PostgreSQL the catalog reloads asynchronously: awaited, so this answer shows the change.
      await catalog.reload();
      const updated = catalog.workspaces(project.id).get(w.id) ?? w;
      ctx.reply.json(200, workspaceWire(updated, catalog.project(project.id) ?? project));
    }),
  ];
}
