/** The route table of every HTTP API, in match order, from the parts the other wiring modules built. */
import type { RoleLookup } from '../app/approval-decisions.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import type { RouterChatServices } from '../app/chat/router-chat-services.js';
import type { Services } from '../app/services.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { RouteDef } from '../http/server.js';
import { audioRoutes } from '../routes/audio.js';
import { batchesRoutes } from '../routes/batches.js';
import { chatCompletionsRoutes } from '../routes/chat-completions.js';
import { conversationsRoutes } from '../routes/conversations.js';
import { embeddingsRoutes } from '../routes/embeddings.js';
import { endpointsRoutes } from '../routes/endpoints.js';
import { execAgentsConnectHttpRoutes } from '../routes/exec-agents-connect.js';
import { execApprovalsRoutes } from '../routes/exec-approvals.js';
import { execInvocationsRoutes } from '../routes/exec-invocations.js';
import { execToolsRoutes } from '../routes/exec-tools.js';
import { filesRoutes, type FilesServices } from '../routes/files.js';
import { managementBudgetsRoutes } from '../routes/management-budgets.js';
import { managementExecRoutes } from '../routes/management-exec.js';
import { managementKeysRoutes } from '../routes/management-keys.js';
import { managementSemanticRouterRoutes, type RouterManagementServices } from '../routes/management-semantic-router.js';
import { managementUsageRoutes } from '../routes/management-usage.js';
import { managementWorkspacesRoutes } from '../routes/management-workspaces.js';
import type { McpRoutes } from '../routes/mcp.js';
import { modelsApiRoutes } from '../routes/models-api.js';
import { modelsRoutes, routerModelsRoutes } from '../routes/models.js';
import { multimodelRoutes } from '../routes/multimodel.js';
import { opsRoutes, testClockRoutes } from '../routes/ops.js';
import { realtimeHttpRoutes } from '../routes/realtime.js';
import { rerankRoutes } from '../routes/rerank.js';
import { semanticRouterChatRoutes } from '../routes/semantic-router-chat.js';
import { slosRoutes } from '../routes/slos.js';
import { testEventRoutes } from '../routes/test-events.js';
import { uploadsRoutes } from '../routes/uploads.js';
import { webhooksRoutes } from '../routes/webhooks.js';
import type { RouterState } from '../router/router-state.js';
import type { RouterSystem } from '../router/router-system.js';
import type { UpstreamClient } from '../upstream/upstream-client.js';
import type { WebhookSystem } from '../webhook-system.js';
import type { BatchParts } from './batches.js';
import { endpointPrices } from '../dashboard/pages/dashboard-pages.js';
import { dashboardRoutes, type DashboardParts } from './dashboard.js';
import type { ExecParts } from './exec.js';
import type { LimitsParts } from './limits.js';
import type { ResponsesParts } from './responses.js';
import type { StoreParts } from './store.js';
import type { TestingHooks } from './testing.js';

export interface RouteParts {
  readonly config: Config;
  readonly services: Services;
  readonly chatServices: ChatServices;
  readonly routerChatServices: RouterChatServices;
  readonly routerManagement: RouterManagementServices;
  readonly routing: RouterSystem;
  readonly routerState: RouterState;
  readonly storage: StoreParts;
  readonly limits: LimitsParts;
  readonly upstream: UpstreamClient;
  readonly webhooks: WebhookSystem;
  readonly exec: ExecParts;
  /** A dashboard user's role in a project (the identity store). */
  readonly roleOf: RoleLookup;
  readonly mcp: McpRoutes;
  readonly responses: ResponsesParts;
  readonly filesServices: FilesServices;
  readonly batches: BatchParts;
  readonly dashboard: DashboardParts;
  readonly testing: TestingHooks;
  readonly clock: Clock;
  /** Guards /readyz's detail (and /metrics, served apart: http.ts). */
  readonly metricsScrapeToken: string | null;
}

/** Every implemented route but /metrics (whose place depends on the metrics listener: http.ts). */
export function gatewayRoutes(p: RouteParts): RouteDef[] {
  const { services, chatServices, routerChatServices, routing, upstream, exec } = p;
  const { agents, execServices } = exec;
  return [
    ...opsRoutes(services, { token: p.metricsScrapeToken, always: false }, upstream),
    ...testClockRoutes(p.clock),
    ...modelsRoutes(services),
    ...endpointsRoutes(services),
    ...chatCompletionsRoutes(chatServices),
    ...semanticRouterChatRoutes(routerChatServices),
    ...multimodelRoutes(routerChatServices),
    ...routerModelsRoutes({ ...services, router: routing.router }),
    ...embeddingsRoutes(chatServices),
    ...rerankRoutes(chatServices),
    ...modelsApiRoutes({ ...services, modelAliases: p.routerState.aliases }),
    ...slosRoutes({ ...services, slos: routing.slos }),
    ...managementSemanticRouterRoutes(p.routerManagement),
    ...managementWorkspacesRoutes({ ...services, workspaceRouting: routing.workspaces }),
    ...audioRoutes({ ...chatServices, audio: p.config.audio }),
    ...realtimeHttpRoutes(chatServices),
    ...managementKeysRoutes({ ...services, keys: p.storage.catalogStore, roleOf: p.roleOf }),
    ...managementBudgetsRoutes({ ...services, budgetStore: p.limits.usageStore, pricesOf: endpointPrices(p.config) }),
    ...managementUsageRoutes({ ...services, usageReader: p.limits.usageStore }),
    ...webhooksRoutes({ ...services, webhooks: p.webhooks.manager }),
    ...testEventRoutes(p.testing.events, p.webhooks.outbox),
    ...managementExecRoutes({ ...services, agentsAdmin: agents.admin, agentRegistry: agents.registry }),
    ...execAgentsConnectHttpRoutes(agents),
    ...execInvocationsRoutes(execServices),
    ...execApprovalsRoutes(execServices),
    ...execToolsRoutes({ ...services, agents: agents.registry }),
    ...p.mcp.routes,
    ...p.responses.routes,
    ...conversationsRoutes({ ...services, conversations: p.responses.conversations }),
    ...filesRoutes(p.filesServices),
    ...batchesRoutes({ ...services, ...p.batches }),
    ...uploadsRoutes(p.filesServices),
    ...dashboardRoutes(p.dashboard, routerChatServices, p.config),
  ];
}
