/**
 * The endpoint a token-spending request reaches, once the route resolved it (routes/guard.ts), and the
 * budget step every such request takes before anything reaches a model: shared by the routes and the use
 * cases that pick their endpoint themselves (multimodel steps).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { budgetError } from '../core/limits/budget-errors.js';
import type { EndpointRecord } from '../core/records.js';
import type { Services } from './services.js';
import type { TurnSink } from './turn-io.js';

export interface EndpointAccess {
  readonly endpoint: EndpointRecord;
  /** null: the request runs project-wide (a key with no user and no list, in a project without a default). */
  readonly workspaceId: string | null;
}

/**
 * Token-spending routes, once the endpoint and workspace are known: `X-Service-Budget-Warning` at 80% of
 * a cap, 429 `endpoint_budget_exhausted` / `workspace_budget_exhausted` once one is spent.
 */
export function requireBudget(ctx: { readonly reply: Pick<TurnSink, 'setHeader'> }, services: Services, auth: AuthenticatedKey, access: EndpointAccess): void {
  const verdict = services.budgets.check(auth.project.id, access.endpoint.id, access.workspaceId, services.now());
  if (!verdict) return;
  // SPEC: the warning says "the request was served in full", so a refusal does not carry it.
  if (verdict.exhausted) throw budgetError(verdict.exhausted);
  if (verdict.warning) ctx.reply.setHeader('X-Service-Budget-Warning', verdict.warning);
}
