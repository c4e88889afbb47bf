/**
 * Every route under `/{project}/...` declares API-key authentication (issue 12: declared in the route
 * table, run by the server before the handler), with the scope SPEC Authentication 2 gives its surface.
 * Regression guarded: a keyed route that forgot its declaration would serve anonymous callers.
 *
 * The list is built as main.ts (through src/wiring/) builds it, from the same route factories, each given a stand-in for its
 * services (a factory only keeps them for its handlers, which never run here). So that a family added to
 * main.ts cannot escape the walk, the test reads main.ts and src/wiring/ and fails on a factory it does not know.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RouteDef } from '../../../src/http/server.js';
import { audioRoutes } from '../../../src/routes/audio.js';
import { batchesRoutes } from '../../../src/routes/batches.js';
import { chatCompletionsRoutes } from '../../../src/routes/chat-completions.js';
import { conversationsRoutes } from '../../../src/routes/conversations.js';
import { embeddingsRoutes } from '../../../src/routes/embeddings.js';
import { endpointsRoutes } from '../../../src/routes/endpoints.js';
import { execAgentsConnectHttpRoutes } from '../../../src/routes/exec-agents-connect.js';
import { execApprovalsRoutes } from '../../../src/routes/exec-approvals.js';
import { execInvocationsRoutes } from '../../../src/routes/exec-invocations.js';
import { execToolsRoutes } from '../../../src/routes/exec-tools.js';
import { filesRoutes } from '../../../src/routes/files.js';
import { managementBudgetsRoutes } from '../../../src/routes/management-budgets.js';
import { managementExecRoutes } from '../../../src/routes/management-exec.js';
import { managementKeysRoutes } from '../../../src/routes/management-keys.js';
import { managementSemanticRouterRoutes } from '../../../src/routes/management-semantic-router.js';
import { managementUsageRoutes } from '../../../src/routes/management-usage.js';
import { managementWorkspacesRoutes } from '../../../src/routes/management-workspaces.js';
import { mcpRoutes } from '../../../src/routes/mcp.js';
import { modelsApiRoutes } from '../../../src/routes/models-api.js';
import { modelsRoutes, routerModelsRoutes } from '../../../src/routes/models.js';
import { multimodelRoutes } from '../../../src/routes/multimodel.js';
import { metricsRoutes, opsRoutes, testClockRoutes } from '../../../src/routes/ops.js';
import { realtimeHttpRoutes } from '../../../src/routes/realtime.js';
import { rerankRoutes } from '../../../src/routes/rerank.js';
import { createResponsesSystem } from '../../../src/routes/responses.js';
import { semanticRouterChatRoutes } from '../../../src/routes/semantic-router-chat.js';
import { slosRoutes } from '../../../src/routes/slos.js';
import { testEventRoutes } from '../../../src/routes/test-events.js';
import { uploadsRoutes } from '../../../src/routes/uploads.js';
import { webhooksRoutes } from '../../../src/routes/webhooks.js';

/**
 * A stand-in for any services object: every property and call yields the stand-in again, a number where
 * arithmetic wants one (`max_bytes + slack`), and it is no thenable.
 */
function standIn<T>(): T {
  const target = function standIn(): void {};
  const proxy: object = new Proxy(target, {
    get: (_t, prop) => (prop === Symbol.toPrimitive ? () => 0 : prop === 'then' ? undefined : proxy),
    apply: () => proxy,
    construct: () => proxy,
  });
  return proxy as T;
}

const mcp = mcpRoutes(standIn());
const responses = await createResponsesSystem(standIn(), standIn());
afterAll(async () => {
  mcp.close();
  await responses.close();
});

/** main.ts's route factories, by the name main.ts calls them by. */
const FACTORIES: Readonly<Record<string, () => RouteDef[]>> = {
  opsRoutes: () => opsRoutes(standIn(), { token: null, always: false }),
  testClockRoutes: () => testClockRoutes({ now: () => 0, advance: (ms: number) => ms }),
  metricsRoutes: () => metricsRoutes(standIn(), null),
  modelsRoutes: () => modelsRoutes(standIn()),
  endpointsRoutes: () => endpointsRoutes(standIn()),
  chatCompletionsRoutes: () => chatCompletionsRoutes(standIn()),
  semanticRouterChatRoutes: () => semanticRouterChatRoutes(standIn()),
  multimodelRoutes: () => multimodelRoutes(standIn()),
  routerModelsRoutes: () => routerModelsRoutes(standIn()),
  embeddingsRoutes: () => embeddingsRoutes(standIn()),
  rerankRoutes: () => rerankRoutes(standIn()),
  modelsApiRoutes: () => modelsApiRoutes(standIn()),
  slosRoutes: () => slosRoutes(standIn()),
  managementSemanticRouterRoutes: () => managementSemanticRouterRoutes(standIn()),
  managementWorkspacesRoutes: () => managementWorkspacesRoutes(standIn()),
  audioRoutes: () => audioRoutes(standIn()),
  realtimeHttpRoutes: () => realtimeHttpRoutes(standIn()),
  managementKeysRoutes: () => managementKeysRoutes(standIn()),
  managementBudgetsRoutes: () => managementBudgetsRoutes(standIn()),
  managementUsageRoutes: () => managementUsageRoutes(standIn()),
  webhooksRoutes: () => webhooksRoutes(standIn()),
  testEventRoutes: () => testEventRoutes(true, standIn()),
  managementExecRoutes: () => managementExecRoutes(standIn()),
  execAgentsConnectHttpRoutes: () => execAgentsConnectHttpRoutes(standIn()),
  execInvocationsRoutes: () => execInvocationsRoutes(standIn()),
  execApprovalsRoutes: () => execApprovalsRoutes(standIn()),
  execToolsRoutes: () => execToolsRoutes(standIn()),
  mcpRoutes: () => mcp.routes,
  createResponsesSystem: () => responses.routes,
  conversationsRoutes: () => conversationsRoutes(standIn()),
  filesRoutes: () => filesRoutes(standIn()),
  batchesRoutes: () => batchesRoutes(standIn()),
  uploadsRoutes: () => uploadsRoutes(standIn()),
};

/**
 * Built in main.ts but serving no `/{project}` path: the dashboard (`/dashboard/...`, `/auth/...`), whose
 * pages declare a session or are public (sign-in, OIDC, assets).
 */
const OUTSIDE_PROJECT_PATHS = new Set(['dashboardPages', 'dashboardAssetRoutes', 'playgroundRoutes', 'createDashboardAuth']);

/**
 * The `/{project}` routes that check a credential in their handler instead, each for the reason its
 * declaration gives.
 */
const IN_HANDLER = new Set([
  // The MCP Origin check (DNS rebinding) answers before the key.
  'POST /:project/v1/mcp',
  'DELETE /:project/v1/mcp',
  // Execution agents present an agent key or a join key, not an API key.
  'GET /:project/v1/exec/agents/connect',
]);

/** SPEC Authentication 2: the scope each surface needs. */
function scopeOf(pattern: string): string {
  if (/\/v1\/(management|webhooks)(\/|$)/.test(pattern)) return 'management';
  if (/\/v1\/exec\//.test(pattern)) return 'execution';
  return 'inference';
}

/** Called by the composition root but not factories of /{project} routes: WebSocket routes and the root's own lists (src/wiring/). */
const COMPOSED = ['realtimeRoutes', 'execAgentsConnectRoutes', 'gatewayRoutes', 'dashboardRoutes'];

const implemented = Object.values(FACTORIES).flatMap((build) => build());
const routes = implemented;
const name = (r: RouteDef): string => `${r.method} ${r.pattern}`;

describe('route authentication declarations', () => {
  it('walks every route factory main.ts calls', () => {
    const src = resolve(import.meta.dirname, '../../../src');
    const wiring = readdirSync(join(src, 'wiring')).filter((f) => f.endsWith('.ts'));
    const root = [join(src, 'main.ts'), ...wiring.map((f) => join(src, 'wiring', f))].map((f) => readFileSync(f, 'utf8')).join('\n');
    const called = new Set([...root.matchAll(/\b(\w+Routes|createResponsesSystem|createDashboardAuth|dashboardPages)\(/g)].map((m) => m[1] ?? ''));
    const unknown = [...called].filter((f) => !(f in FACTORIES) && !OUTSIDE_PROJECT_PATHS.has(f) && !COMPOSED.includes(f));
    expect(unknown).toEqual([]);
    expect(routes.length).toBeGreaterThan(100);
  });

  it('declares an API key on every /{project} route, with the scope of its surface', () => {
    const wrong = routes
      .filter((r) => r.pattern.startsWith('/:project/') && !IN_HANDLER.has(name(r)))
      .filter((r) => r.auth.kind !== 'key' || r.auth.scope !== scopeOf(r.pattern))
      .map((r) => `${name(r)}: ${r.auth.kind}${r.auth.kind === 'key' ? ` ${r.auth.scope}` : ''}`);
    expect(wrong).toEqual([]);
  });

  it('lists exactly the /{project} routes that check their credential in the handler, each saying why', () => {
    const inHandler = routes.filter((r) => r.pattern.startsWith('/:project/') && r.auth.kind === 'in-handler');
    expect(inHandler.map(name).sort()).toEqual([...IN_HANDLER].sort());
    for (const r of inHandler) if (r.auth.kind === 'in-handler') expect(r.auth.why).not.toBe('');
  });

  it('leaves public only the probes, the test hooks and the metrics scrape outside /{project}', () => {
    const open = routes.filter((r) => r.auth.kind === 'public').map(name);
    expect(open.every((n) => !n.includes(' /:project/'))).toBe(true);
    expect(open).toEqual(expect.arrayContaining(['GET /healthz', 'GET /readyz']));
  });
});
