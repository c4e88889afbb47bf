/**
 * The operator dashboard (issue 22): users and their roles, sign-in (users, sessions, CSRF; `auth.dashboardRoute`
 * guards every page), and the pages, which run the same use cases as the management API behind the session guard.
 */
import type { RoleLookup } from '../app/approval-decisions.js';
import type { RouterChatServices } from '../app/chat/router-chat-services.js';
import { createKeyManagement } from '../app/key-management.js';
import { createRouterManagement, type RouterManagementDeps } from '../app/router-management.js';
import type { Config } from '../config.js';
import type { IdentityStore } from '../core/store/identity-store.js';
import type { UsageStore } from '../core/store/usage-store.js';
import { createDashboardAuth, type DashboardAuth } from '../dashboard/auth/dashboard-auth.js';
import { dashboardAssetRoutes, dashboardPages, endpointPrices } from '../dashboard/pages/dashboard-pages.js';
import type { PageDeps } from '../dashboard/pages/page-kit.js';
import { peopleServices } from '../dashboard/people-services.js';
import { playgroundRoutes } from '../dashboard/playground/playground-routes.js';
import type { RouteDef } from '../http/server.js';
import type { RouterState } from '../router/router-state.js';
import type { RouterSystem } from '../router/router-system.js';
import { createIdentityStore } from '../store/identity/identity-store.js';
import { loadSecretBox, storedSealedValues, type SecretBox } from '../store/secret-box.js';
import type { UpstreamClient } from '../upstream/upstream-client.js';
import type { WebhookSystem } from '../webhook-system.js';
import type { ExecParts } from './exec.js';
import type { LimitsParts } from './limits.js';
import type { StoreParts } from './store.js';

/**
 * Dashboard users and their roles (issue 22). With PostgreSQL, users and sessions are shared: a cookie
 * issued by one replica opens pages on every other. Approvals ask it who is an owner or admin.
 */
export function openIdentity({ mainSql }: StoreParts): { identity: IdentityStore; roleOf: RoleLookup } {
  const identity = createIdentityStore(mainSql.runner);
  const roleOf: RoleLookup = async (userId, projectId) => (await identity.users.roles(userId)).find((r) => r.projectId === projectId)?.role ?? null;
  return { identity, roleOf };
}

export interface DashboardParts {
  readonly auth: DashboardAuth;
  readonly pageDeps: PageDeps;
}

export interface DashboardDeps {
  readonly config: Config;
  readonly storage: StoreParts;
  readonly identity: IdentityStore;
  readonly limits: LimitsParts;
  readonly routerManagement: RouterManagementDeps;
  readonly routing: RouterSystem;
  readonly routerState: RouterState;
  readonly webhooks: WebhookSystem;
  readonly exec: ExecParts;
  readonly upstream: UpstreamClient;
  readonly now: () => number;
}

export async function wireDashboard(d: DashboardDeps): Promise<DashboardParts> {
  const { config, storage, identity, now } = d;
  const { catalog, catalogStore } = storage;
  const reloadCredentials = () => catalog.reload();
  const auth = await createDashboardAuth({ config, box: await signInSecretBox(storage, identity), identity, now, throttles: d.limits.coordination.throttles, reloadCredentials });
  const pageDeps: PageDeps = {
    catalog,
    now,
    keys: createKeyManagement({ keys: catalogStore, catalog, now }),
    router: createRouterManagement(d.routerManagement),
    webhooks: d.webhooks.manager,
    usage: d.limits.usageStore,
    approvals: d.exec.approvals,
    // Approvals by name and the members page (issue 34).
    ...peopleServices({ users: identity.users, keys: catalogStore, exec: d.exec.execInvocations.service, agents: d.exec.agents, now, reloadCredentials }),
    decisions: d.routing.decisions,
    upstreamReport: (projectId: string) => d.upstream.report(projectId),
    pricesOf: endpointPrices(config),
    aliases: d.routerState.aliases,
  };
  return { auth, pageDeps };
}

/** Sign-in, the guarded pages, their assets, and the chat playground (issue 23): turns through the chat use cases, as the signed-in user. */
export function dashboardRoutes({ auth, pageDeps }: DashboardParts, services: RouterChatServices, config: Config): RouteDef[] {
  return [
    ...auth.routes,
    ...dashboardPages(pageDeps).map((page) => auth.dashboardRoute(page)),
    ...dashboardAssetRoutes(),
    ...playgroundRoutes({ pages: pageDeps, services, guard: auth.dashboardRoute, maxBodyBytes: config.server.max_body_bytes }),
  ];
}

/**
 * The key that seals the TOTP secrets, checked against what the identity store holds (a wrong
 * SWITCHBOARD_SECRET_KEY would lock out every two-factor user). On PostgreSQL the identity store is shared
 * by the replicas: the key is SWITCHBOARD_SECRET_KEY, the same on every replica (store/backend.ts refuses
 * to start without it), never a key file beside this replica's SQLite file.
 */
async function signInSecretBox(storage: StoreParts, identity: IdentityStore): Promise<SecretBox> {
  const { db, dbPath, backend } = storage;
  if (backend.pg === null) return loadSecretBox(dbPath, storedSealedValues(db));
  const sealedTotp = await identity.users.newestSealedTotp();
  return loadSecretBox(dbPath, sealedTotp ? [sealedTotp] : [], process.env, 'the PostgreSQL database');
}
