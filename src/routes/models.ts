/**
 * GET /{project}/v1/models, /{project}/v1/models/{model}, and the same under a direct endpoint path
 * (/{project}/{endpoint}/v1/models) so that an OpenAI client whose base URL is the endpoint can list too.
 * Items carry exactly SPEC's fields: id, object, created, owned_by.
 */
import { GatewayError } from '../errors.js';
import type { EndpointRecord } from '../core/records.js';
import type { RouteDef } from '../http/server.js';
import { reachableEndpoints, requireEndpoint, requireKey } from './guard.js';
import type { Services } from './services.js';

interface ModelItem {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
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

function findModel(items: ModelItem[], id: string): ModelItem {
  const item = items.find((m) => m.id === id);
  if (!item) throw new GatewayError('model_not_found', { param: 'model', message: `No model ${JSON.stringify(id)} is served in this project.` });
  return item;
}

export function modelsRoutes(services: Services): RouteDef[] {
  const projectModels = (ctx: Parameters<RouteDef['handle']>[0]): ModelItem[] => {
    const auth = requireKey(ctx, services, 'inference');
    return modelItems(reachableEndpoints(ctx.req, services, auth), auth.project.id);
  };
  const endpointModels = (ctx: Parameters<RouteDef['handle']>[0]): ModelItem[] => {
    const auth = requireKey(ctx, services, 'inference');
    const { endpoint } = requireEndpoint(ctx.req, services, auth);
    return modelItems([endpoint], auth.project.id);
  };
  return [
    {
      method: 'GET',
      pattern: '/:project/v1/models',
      family: 'models',
      handle: (ctx) => ctx.reply.json(200, { object: 'list', data: projectModels(ctx) }),
    },
    {
      method: 'GET',
      pattern: '/:project/v1/models/*model',
      family: 'models',
      handle: (ctx) => ctx.reply.json(200, findModel(projectModels(ctx), ctx.req.params.model ?? '')),
    },
    {
      method: 'GET',
      pattern: '/:project/:endpoint/v1/models',
      family: 'models',
      handle: (ctx) => ctx.reply.json(200, { object: 'list', data: endpointModels(ctx) }),
    },
    {
      method: 'GET',
      pattern: '/:project/:endpoint/v1/models/*model',
      family: 'models',
      handle: (ctx) => ctx.reply.json(200, findModel(endpointModels(ctx), ctx.req.params.model ?? '')),
    },
  ];
}
