/**
 * `/{project}/v1/mcp` (docs/mcp.md): the MCP server over the Streamable HTTP transport. Each request is
 * checked here as an API request is (SPEC Authentication 1-10, Limits): Origin and Host first (DNS
 * rebinding; 403 origin_not_allowed), then the key with the `execution` scope (a key without it: 403
 * scope_insufficient, type authentication_error: SPEC Authentication 3), the request rate limits, the
 * workspace (`X-Service-Workspace`, else the key's single workspace or the project default; 403
 * workspace_not_allowed outside a confined key's list), the API's body cap and JSON depth limit. On a
 * session, each further request of a batch is charged its own unit and each `tools/call`'s params are
 * checked (mcp/request-screen.ts); a new session takes a place under its key's and project's caps
 * (mcp/mcp-sessions.ts). Then the SDK's transport of the session takes it. GET (a stream for
 * server-initiated messages) answers 405: this server sends none.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { ApprovalDecisions } from '../app/approval-decisions.js';
import { resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import type { AgentRegistry } from '../core/exec/agent-registry.js';
import { GatewayError } from '../errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { McpCallContext } from '../mcp/mcp-call-context.js';
import { createMcpServer, type McpToolsDeps } from '../mcp/mcp-server.js';
import { DEFAULT_SESSION_LIMITS, McpSessions, type McpSession, type McpSessionLimits, type Reservation } from '../mcp/mcp-sessions.js';
import { PendingAnswers } from '../mcp/pending-answers.js';
import { requestIdsOf, screenMessages, sseEvents } from '../mcp/request-screen.js';
import { refusalError, writeRateLimitHeaders } from '../core/limits/limit-headers.js';
import { limitClassOf } from '../core/limits/rate-limiter.js';
import { originRefusal, type OriginPolicy } from '../mcp/origin-guard.js';
import { sendWebResponse, webRequestOf } from '../mcp/web-bridge.js';
import type { ExecServices } from './exec-invocations.js';
import { namedWorkspace, requireKey } from './guard.js';
import type { WorkerRpc } from '../coordination/worker-rpc.js';
import { createMcpWorkerSessions, type McpWorkerSessions } from './mcp-worker-sessions.js';

export interface McpServices extends ExecServices {
  /** The approvals' use cases, with their rule of who decides (the `exec.approval_*` tools). */
  readonly approvals: ApprovalDecisions;
  readonly agents: AgentRegistry;
  readonly mcpOrigins: OriginPolicy;
  /** config `server.max_body_bytes`: the API's cap, which the SDK's own body reader must not undercut. */
  readonly maxBodyBytes: number;
  /** config `exec.mcp_sessions`; what is absent: DEFAULT_SESSION_LIMITS. */
  readonly mcpSessionLimits?: Partial<McpSessionLimits>;
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

/**
 * A new session's transport (not yet stored) for a request without a session id, on a place reserved
 * for it under the key's and the project's caps (429 past them); stored once `initialize` succeeded.
 */
async function newTransport(services: McpServices, sessions: McpSessions, deps: McpToolsDeps, workers: McpWorkerSessions | null, auth: AuthenticatedKey): Promise<{ transport: WebStandardStreamableHTTPServerTransport; place: Reservation }> {
  const place = sessions.reserve(auth.project.id, auth.key.id);
  const server = createMcpServer(deps);
  const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => workers?.newSessionId() ?? randomUUID(),
    // Our reader already capped the body (413 payload_too_large); the SDK's default of 4 MiB is lower.
    maxRequestBodySize: services.maxBodyBytes,
    // Stored only once `initialize` succeeded: a stray request without a session leaves nothing behind.
    onsessioninitialized: (id) => {
      place.commit(id, { server, transport, projectId: auth.project.id, keyId: auth.key.id, lastUsedAt: services.now(), inFlight: 0, answering: new Map() });
    },
    onsessionclosed: (id) => sessions.forget(id),
  });
  await server.connect(transport);
  return { transport, place };
}

/** One more unit of the key's request class for a batch's further request (request-screen.ts). */
const admitOne = (services: McpServices, ctx: RouteContext, auth: AuthenticatedKey) => async (): Promise<GatewayError | null> => {
  const { route } = ctx;
  const admission = await services.limits.admit(auth.project, auth.key, limitClassOf(route.family, route.method, route.pattern), services.now());
  // Replacing the headers of the admissions before: they report the allowance left after the last unit.
  writeRateLimitHeaders(admission.view, (name, value) => ctx.reply.replaceHeader(name, value));
  return admission.refusal ? refusalError(admission.refusal) : null;
};

export function mcpRoutes(services: McpServices): McpRoutes {
  const sessions = new McpSessions(services.now, { ...DEFAULT_SESSION_LIMITS, ...services.mcpSessionLimits });
  const sweep = setInterval(() => sessions.sweep(), 60_000);
  sweep.unref();
  const deps: McpToolsDeps = {
    services,
    exec: services.exec,
    agents: services.agents,
    timeoutMs: services.execDefaultTimeoutMs,
    decisions: services.approvals,
  };
  const workers = services.workerRpc
    ? createMcpWorkerSessions({ rpc: services.workerRpc, sessions, createServer: () => createMcpServer(deps), maxBodyBytes: services.maxBodyBytes, now: services.now })
    : null;

  /**
   * A session's request: its batch charged and its tools/call params checked first (request-screen.ts).
   * `session` is null for another worker's session served here on a replica (its owner counts its use).
   */
  async function onSession(ctx: RouteContext, auth: AuthenticatedKey, transport: WebStandardStreamableHTTPServerTransport, session: McpSession | null, call: McpCallContext, body: Buffer | null): Promise<void> {
    const { req, reply } = ctx;
    const parsed = req.method === 'POST' && body ? parsedJson(body) : undefined;
    const screened = parsed === undefined ? null : await screenMessages(parsed, admitOne(services, ctx, auth));
    const answered = screened?.answered ?? [];
    if (session) session.inFlight += 1;
    // The requests the SDK will answer; a cancel (this POST's or a later one's) settles one of them.
    const requests = screened === null ? [] : requestIdsOf(screened.forward);
    const answering = session?.answering;
    const pending = answering && requests.length > 0 ? new PendingAnswers(requests) : undefined;
    const cancels = new Map(requests.map((id) => [id, () => pending?.cancelled(id)]));
    for (const [id, cancel] of cancels) answering?.set(id, cancel);
    try {
      const options = { authInfo: call.toAuthInfo(), ...(answered.length > 0 ? { parsedBody: screened?.forward } : {}) };
      const res = await transport.handleRequest(webRequestOf(req, body), options);
      const sessionId = req.header('mcp-session-id');
      if (workers && sessionId !== undefined && req.method === 'DELETE' && res.ok) await workers.ended(sessionId, auth.project.id, auth.key.id);
      for (const id of cancelledIds(parsed)) answering?.get(id)?.();
      await sendWebResponse(res, req, reply, sseEvents(answered), pending);
    } finally {
      if (session) session.inFlight -= 1;
      // Only this POST's own entries: a later POST may reuse an id once its request was answered.
      for (const [id, cancel] of cancels) if (answering?.get(id) === cancel) answering.delete(id);
    }
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
    const call = new McpCallContext(auth, workspaceId, req.signal);
    const sessionId = req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const session = sessions.use(sessionId, auth.project.id, auth.key.id);
      // Not this worker's: another worker's (its id says which), served here if the owner holds it for this key.
      const transport = session?.transport ?? (workers ? await workers.replica(sessionId, auth.project.id, auth.key.id) : null);
      if (!transport) {
        reply.send(404, SESSION_NOT_FOUND, 'application/json');
        return;
      }
      await onSession(ctx, auth, transport, session, call, body);
      return;
    }
    const { transport, place } = await newTransport(services, sessions, deps, workers, auth);
    try {
      const res = await transport.handleRequest(webRequestOf(req, body), { authInfo: call.toAuthInfo() });
      workers?.initialized(transport, body);
      await sendWebResponse(res, req, reply);
    } finally {
      // Committed if `initialize` succeeded; otherwise the place goes back.
      place.release();
    }
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

/** The request ids (as JSON text) a POST's notifications/cancelled name. */
function cancelledIds(parsed: unknown): string[] {
  const messages = Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
  const ids: string[] = [];
  for (const m of messages) {
    if (m === null || typeof m !== 'object') continue;
    const { method, params } = m as { method?: unknown; params?: { requestId?: unknown } };
    const id = params?.requestId;
    if (method === 'notifications/cancelled' && (typeof id === 'string' || typeof id === 'number')) ids.push(JSON.stringify(id));
  }
  return ids;
}

/** The body as JSON, or undefined when it is not: the SDK answers that itself (-32700). */
function parsedJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
