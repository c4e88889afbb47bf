/**
 * `/{project}/v1/mcp` (docs/mcp.md): the MCP server over the Streamable HTTP transport. Each request is
 * checked here as an API request is (SPEC Authentication 1-10, Limits): Origin and Host first (DNS
 * rebinding; 403 origin_not_allowed), then the key with the `execution` scope (a key without it: 403
 * scope_insufficient, type authentication_error: SPEC Authentication 3), the request rate limits, the
 * workspace (`X-Service-Workspace`, else the key's single workspace or the project default; 403
 * workspace_not_allowed outside a confined key's list), the API's body cap and JSON depth limit. Then the SDK's transport of the
 * session takes it. GET (a stream for server-initiated messages) answers 405: this server sends none.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { createApprovalDecisions } from '../app/approval-decisions.js';
import { resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import type { AgentRegistry } from '../core/exec/agent-registry.js';
import { GatewayError } from '../errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/json-depth.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { McpCallContext } from '../mcp/mcp-call-context.js';
import { createMcpServer, type McpToolsDeps } from '../mcp/mcp-server.js';
import { McpSessions, type McpSession } from '../mcp/mcp-sessions.js';
import { originRefusal, type OriginPolicy } from '../mcp/origin-guard.js';
import { sendWebResponse, webRequestOf } from '../mcp/web-bridge.js';
import type { ExecServices } from './exec-invocations.js';
import { namedWorkspace, requireKey } from './guard.js';
import type { WorkerRpc } from '../coordination/worker-rpc.js';
import { createMcpWorkerSessions } from './mcp-worker-sessions.js';

export interface McpServices extends ExecServices {
  readonly agents: AgentRegistry;
  readonly mcpOrigins: OriginPolicy;
  /** config `server.max_body_bytes`: the API's cap, which the SDK's own body reader must not undercut. */
  readonly maxBodyBytes: number;
  /** Under `serve --workers N`: a session initialized on one worker is served on every other (mcp-worker-sessions.ts). */
  readonly workerRpc?: WorkerRpc | null;
}

export interface McpRoutes {
  readonly routes: RouteDef[];
  /** Ends every session (graceful stop) and the idle sweep. */
  close(): void;
}

/** SDK convention for a session this server does not hold (JSON-RPC error -32001 with HTTP 404). */
const SESSION_NOT_FOUND = JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found: initialize a new session.' }, id: null });

export function mcpRoutes(services: McpServices): McpRoutes {
  const sessions = new McpSessions(services.now);
  const sweep = setInterval(() => sessions.sweep(), 60_000);
  sweep.unref();
  const deps: McpToolsDeps = {
    services,
    exec: services.exec,
    agents: services.agents,
    timeoutMs: services.execDefaultTimeoutMs,
    decisions: createApprovalDecisions(services.exec),
  };
  const workers = services.workerRpc
    ? createMcpWorkerSessions({ rpc: services.workerRpc, sessions, createServer: () => createMcpServer(deps), maxBodyBytes: services.maxBodyBytes, now: services.now })
    : null;

  /** The session's transport; a new one (not yet stored) for a request without a session id. */
  async function transportFor(ctx: RouteContext, auth: AuthenticatedKey): Promise<WebStandardStreamableHTTPServerTransport | null> {
    const sessionId = ctx.req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const held = sessions.use(sessionId, auth.project.id, auth.key.id)?.transport;
      // Not this worker's: another worker's (its id says which), served here if the owner holds it for this key.
      return held ?? (workers ? workers.replica(sessionId, auth.project.id, auth.key.id) : null);
    }
    const server = createMcpServer(deps);
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => workers?.newSessionId() ?? randomUUID(),
      // Our reader already capped the body (413 payload_too_large); the SDK's default of 4 MiB is lower.
      maxRequestBodySize: services.maxBodyBytes,
      // Stored only once `initialize` succeeded: a stray request without a session leaves nothing behind.
      onsessioninitialized: (id) => {
        const session: McpSession = { server, transport, projectId: auth.project.id, keyId: auth.key.id, lastUsedAt: services.now() };
        sessions.add(id, session);
      },
      onsessionclosed: (id) => sessions.forget(id),
    });
    await server.connect(transport);
    return transport;
  }

  async function handle(ctx: RouteContext): Promise<void> {
    const { req, reply } = ctx;
    const refused = originRefusal(req.header('host'), req.header('origin'), services.mcpOrigins);
    if (refused) throw new GatewayError('origin_not_allowed', { message: refused });
    const auth = await requireKey(ctx, services, 'execution');
    const workspaceId = mcpWorkspace(ctx, services, auth);
    const body = req.method === 'POST' ? await req.body() : null;
    // As on every JSON route (http/json-depth.ts): stored arguments are re-serialized, which recurses.
    if (body && nestsDeeperThan(body)) throw new GatewayError('invalid_json', { message: `The request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; flatten it.` });
    const transport = await transportFor(ctx, auth);
    if (!transport) {
      reply.send(404, SESSION_NOT_FOUND, 'application/json');
      return;
    }
    const call = new McpCallContext(auth, workspaceId, req.signal);
    const res = await transport.handleRequest(webRequestOf(req, body), { authInfo: call.toAuthInfo() });
    if (workers) {
      const sessionId = req.header('mcp-session-id');
      if (sessionId === undefined) workers.initialized(transport, body);
      else if (req.method === 'DELETE' && res.ok) await workers.ended(sessionId, auth.project.id, auth.key.id);
    }
    await sendWebResponse(res, req, reply);
  }

  // The key is checked in `handle`, not declared: the Origin check (DNS rebinding) answers before it.
  const auth = { kind: 'in-handler', credential: 'API key with the execution scope', why: 'the Origin check answers before the key' } as const;
  const route = (method: RouteDef['method']): RouteDef => ({ method, pattern: '/:project/v1/mcp', family: 'mcp', auth, handle });
  return {
    routes: [route('POST'), route('DELETE')],
    close() {
      clearInterval(sweep);
      workers?.close();
      sessions.closeAll();
    },
  };
}

/**
 * SPEC Authentication 10 with `X-Service-Workspace` (the MCP header; `X-Workspace-Id` is read too, as on
 * every keyed route): named, else a confined key's single workspace, else the project's default. Tools run
 * in one workspace, so a request that ends up in none is 400 missing_workspace_id.
 */
function mcpWorkspace(ctx: RouteContext, services: ExecServices, auth: AuthenticatedKey): string {
  const { named, namedBy } = namedWorkspace(ctx.req);
  const workspaceId = resolveWorkspace(auth.key, auth.project, { named, namedBy, workspaces: services.catalog.workspaces(auth.project.id), workspaceProject: services.catalog.workspaceProject });
  if (workspaceId === null || !services.catalog.workspaces(auth.project.id).has(workspaceId)) {
    throw new GatewayError('missing_workspace_id', { param: 'X-Service-Workspace', message: `Project ${auth.project.id} has no default workspace: name one with X-Service-Workspace (ws_<hex>).` });
  }
  return workspaceId;
}
