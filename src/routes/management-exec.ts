/**
 * `/{project}/v1/management/exec/...` (docs/exec.md "Management routes"): join keys and execution
 * agents. Management scope and rate limit, 16 KiB bodies. A join key's value and an agent key appear
 * once, in the create and rotate-key responses (`Cache-Control: no-store`). Times are ISO 8601 strings,
 * as in SPEC's exec payloads; `project_id` is the project's `proj_` id, as on invocations (only the
 * `exec.agent_enrolled` event carries the UUID, SPEC's payload).
 */
import type { AgentsAdmin } from '../exec/agents/agents-admin.js';
import type { LocalAgentRegistry } from '../exec/agents/local-agent-registry.js';
import type { AgentRecord, JoinKeyRecord } from '../exec/agents/records.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { checkWorkspaceIds, execBody, parseCreateJoinKey, parsePatchAgent } from '../schemas/management-exec.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

export interface ExecManagementServices extends Services {
  readonly agentsAdmin: AgentsAdmin;
  readonly agentRegistry: LocalAgentRegistry;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function joinKeyWire(k: JoinKeyRecord, value?: string) {
  return { id: k.id, object: 'exec.join_key' as const, name: k.name, ...(value === undefined ? {} : { value }), created_at: iso(k.createdAt), revoked_at: iso(k.revokedAt) };
}

export function agentWire(a: AgentRecord, registry: LocalAgentRegistry) {
  const online = a.deletedAt === null && registry.isOnline(a.id);
  return {
    id: a.id,
    object: 'exec.agent' as const,
    registration_name: a.registrationName,
    description: a.description,
    project_id: a.projectId,
    workspace_ids: a.workspaceIds,
    status: online ? ('online' as const) : ('offline' as const),
    manifest_hash: a.manifestHash,
    tools: a.manifest.tools,
    enrolled_at: iso(a.enrolledAt),
    last_seen_at: iso((online ? registry.lastSeen(a.id) : null) ?? a.lastSeenAt),
    deleted_at: iso(a.deletedAt),
  };
}

export function managementExecRoutes(services: ExecManagementServices): RouteDef[] {
  const { agentsAdmin: admin, agentRegistry: registry, catalog } = services;
  type Handler = (ctx: RouteContext, auth: AuthenticatedKey) => Promise<void> | void;
  const route = (method: RouteDef['method'], pattern: string, handle: Handler): RouteDef =>
    keyed(services, 'management', {
      method,
      pattern: `/:project/v1/management/exec${pattern}`,
      family: 'management',
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle,
    });
  const agentId = (ctx: RouteContext): string => ctx.req.params.agent ?? '';
  const agent = (a: AgentRecord) => agentWire(a, registry);

  return [
    route('POST', '/join-keys', async (ctx, { project }) => {
      const body = parseCreateJoinKey(execBody(await ctx.req.body()));
      const { record, value } = await admin.createJoinKey(project.id, body.name ?? null);
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(201, joinKeyWire(record, value));
    }),
    route('GET', '/join-keys', async (ctx, { project }) => {
      ctx.reply.json(200, { object: 'list', data: (await admin.listJoinKeys(project.id)).map((k) => joinKeyWire(k)) });
    }),
    route('DELETE', '/join-keys/:joinKey', async (ctx, { project }) => {
      ctx.reply.json(200, joinKeyWire(await admin.revokeJoinKey(project.id, ctx.req.params.joinKey ?? '')));
    }),
    route('GET', '/agents', async (ctx, auth) => {
      ctx.reply.json(200, { object: 'list', data: (await admin.listAgents(auth.project.id)).map((a) => agent(a)) });
    }),
    route('GET', '/agents/:agent', async (ctx, auth) => {
      ctx.reply.json(200, agent(await admin.getAgent(auth.project.id, agentId(ctx))));
    }),
    route('PATCH', '/agents/:agent', async (ctx, auth) => {
      const body = parsePatchAgent(execBody(await ctx.req.body()));
      if (body.workspace_ids) checkWorkspaceIds(body.workspace_ids, catalog.workspaces(auth.project.id), auth.project.id);
      const patch = {
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.workspace_ids === undefined ? {} : { workspaceIds: body.workspace_ids }),
      };
      ctx.reply.json(200, agent(await admin.updateAgent(auth.project.id, agentId(ctx), patch)));
    }),
    route('DELETE', '/agents/:agent', async (ctx, { project }) => {
      const deleted = await admin.deleteAgent(project.id, agentId(ctx));
      ctx.reply.json(200, { id: deleted.id, object: 'exec.agent' as const, deleted: true });
    }),
    route('POST', '/agents/:agent/rotate-key', async (ctx, { project }) => {
      // No body is defined; one that is sent must still be JSON, as on every exec route.
      execBody(await ctx.req.body());
      const { agent: rotated, value } = await admin.rotateAgentKey(project.id, agentId(ctx));
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(200, { id: rotated.id, agent_key: value });
    }),
  ];
}
