/**
 * GET /{project}/v1/models, /{project}/v1/models/{model}, and the same under a direct endpoint path
 * (/{project}/{endpoint}/v1/models) and under the router base URLs (/{project}/_semantic/router/v1/models,
 * pinned: /{project}/{workspace}/_semantic/router/v1/models), so that an OpenAI client whose base URL is
 * an endpoint or the router can list too. Items carry exactly SPEC's fields: id, object, created, owned_by;
 * the project list adds the project's aliases (models-api.ts), which also carry `target`.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { EndpointRecord, ProjectRecord } from '../core/records.js';
import type { ModelAlias } from '../core/store/router-store.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import type { SemanticRouter } from '../router/semantic-router.js';
import { keyed, reachableEndpoints, requireEndpoint } from './guard.js';
import { routerWorkspace } from './semantic-router-chat.js';
import type { Services } from '../app/services.js';

/**
 * The model a client names on the router base URL to say "let the router choose": listed first there. The
 * request's `model` is informational on every route (SPEC "What the service does" 2), so any name is
 * served the same; this one is what a model picker should offer, and what exact_request_model rules see.
 */
export const ROUTED_MODEL_ID = 'auto';

interface ModelItem {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /** Aliases only (the Models API): the model id the alias stands for. */
  target?: string;
}

/**
 * The project's aliases whose target is among the listed models, after them. An alias whose name a served
 * model took since (config changed) is hidden: the model id wins resolution too.
 */
export function aliasItems(aliases: readonly ModelAlias[], listed: readonly ModelItem[], ownedBy: string): ModelItem[] {
  const ids = new Set(listed.map((m) => m.id));
  return aliases
    .filter((a) => ids.has(a.target) && !ids.has(a.alias))
    .map((a) => ({ id: a.alias, object: 'model' as const, created: Math.floor(a.createdAt / 1000), owned_by: ownedBy, target: a.target }));
}

/** One item per distinct model id; `created` is when the first endpoint serving it was created. */
export function modelItems(endpoints: readonly EndpointRecord[], ownedBy: string): ModelItem[] {
  const byId = new Map<string, ModelItem>();
  for (const e of endpoints) {
    const created = Math.floor(e.createdAt / 1000);
    const seen = byId.get(e.model.id);
    if (!seen) byId.set(e.model.id, { id: e.model.id, object: 'model', created, owned_by: ownedBy });
    else if (created < seen.created) seen.created = created;
  }
  return [...byId.values()];
}

/** The router base URL's list: the routed pseudo-model, then the models a routed turn may be served by. */
export function routerModelItems(project: ProjectRecord, routable: readonly EndpointRecord[]): ModelItem[] {
  const routed: ModelItem = { id: ROUTED_MODEL_ID, object: 'model', created: Math.floor(project.createdAt / 1000), owned_by: project.id };
  // Ids stay unique: a served model that happens to be called `auto` is the pseudo-model's namesake.
  return [routed, ...modelItems(routable, project.id).filter((m) => m.id !== ROUTED_MODEL_ID)];
}

function findModel(items: ModelItem[], id: string): ModelItem {
  const item = items.find((m) => m.id === id);
  if (!item) throw new GatewayError('model_not_found', { param: 'model', message: `No model ${JSON.stringify(id)} is served in this project within this API key's reach (its endpoint and workspaces).` });
  return item;
}

/**
 * The router base URLs: the workspace a routed turn with the same URL, key and headers would run in
 * (semantic-router-chat.ts), and what the router may dispatch it to there.
 */
export function routerModelsRoutes(services: Services & { readonly router: SemanticRouter }): RouteDef[] {
  const list = (ctx: RouteContext, auth: AuthenticatedKey): ModelItem[] => {
    const { workspaceId } = routerWorkspace(ctx, services, auth);
    return routerModelItems(auth.project, services.router.routableEndpoints(auth.project.id, workspaceId, auth.key.endpointId));
  };
  return ['/:project/_semantic/router/v1/models', '/:project/:workspace/_semantic/router/v1/models'].flatMap((base): RouteDef[] => [
    keyed(services, 'inference', { method: 'GET', pattern: base, family: 'models', handle: (ctx, auth) => ctx.reply.json(200, { object: 'list', data: list(ctx, auth) }) }),
    keyed(services, 'inference', { method: 'GET', pattern: `${base}/*model`, family: 'models', handle: (ctx, auth) => ctx.reply.json(200, findModel(list(ctx, auth), ctx.req.params.model ?? '')) }),
  ]);
}

export function modelsRoutes(services: Services): RouteDef[] {
  const projectModels = (ctx: RouteContext, auth: AuthenticatedKey): ModelItem[] => {
    const served = modelItems(reachableEndpoints(ctx.req, services, auth), auth.project.id);
    return [...served, ...aliasItems(services.modelAliases?.list(auth.project.id) ?? [], served, auth.project.id)];
  };
  const endpointModels = (ctx: RouteContext, auth: AuthenticatedKey): ModelItem[] => {
    const { endpoint } = requireEndpoint(ctx.req, services, auth);
    return modelItems([endpoint], auth.project.id);
  };
  return [
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/models',
      family: 'models',
      handle: (ctx, auth) => ctx.reply.json(200, { object: 'list', data: projectModels(ctx, auth) }),
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/models/*model',
      family: 'models',
      handle: (ctx, auth) => ctx.reply.json(200, findModel(projectModels(ctx, auth), ctx.req.params.model ?? '')),
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/:endpoint/v1/models',
      family: 'models',
      handle: (ctx, auth) => ctx.reply.json(200, { object: 'list', data: endpointModels(ctx, auth) }),
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/:endpoint/v1/models/*model',
      family: 'models',
      handle: (ctx, auth) => ctx.reply.json(200, findModel(endpointModels(ctx, auth), ctx.req.params.model ?? '')),
    }),
  ];
}
