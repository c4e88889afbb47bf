/**
 * The Models API (SPEC "Models, endpoints, reranking": POST, PATCH, DELETE, authorized under `inference`,
 * shapes not shown): project model aliases. An alias is a name a client may put in `model` on the
 * model-addressed routes (`/{project}/v1/chat/completions`, embeddings, audio, rerank), standing for a
 * model id the project serves; `GET /{project}/v1/models` lists it with its `target`.
 *
 *   POST   /{project}/v1/models          {id, target}  -> 201 alias item
 *   PATCH  /{project}/v1/models/{alias}  {target}      -> 200 alias item
 *   DELETE /{project}/v1/models/{alias}                -> 200 {id, object: "model", deleted: true}
 *
 * Served models come from the config and are not edited here: a served id answers PATCH and DELETE with
 * 400, and an alias may not take a served id (409 model_exists), nor an existing alias's.
 */
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseAliasCreate, parseAliasUpdate } from '../schemas/models-api.js';
import type { ModelAlias } from '../core/store/router-store.js';
import type { ModelAliasBook } from '../router/router-state.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

export interface ModelsApiServices extends Services {
  readonly modelAliases: ModelAliasBook;
}

function aliasItem(a: ModelAlias) {
  return { id: a.alias, object: 'model' as const, created: Math.floor(a.createdAt / 1000), owned_by: a.projectId, target: a.target };
}

export function modelsApiRoutes(services: ModelsApiServices): RouteDef[] {
  const repo = services.modelAliases;
  const servedIds = (projectId: string): Set<string> => new Set(services.catalog.endpoints(projectId).map((e) => e.model.id));

  const requireTarget = (projectId: string, target: string): void => {
    if (!servedIds(projectId).has(target)) {
      throw new GatewayError('invalid_request', {
        param: 'target',
        message: `target must be a model id this project serves (GET /${projectId}/v1/models lists them; an alias cannot stand for another alias); got ${JSON.stringify(target)}.`,
      });
    }
  };

  /** The alias a path names; a served id is refused (400), anything else is not found (404). */
  const requireAlias = (projectId: string, name: string): ModelAlias => {
    const alias = repo.get(projectId, name);
    if (alias) return alias;
    if (servedIds(projectId).has(name)) {
      throw new GatewayError('invalid_request', {
        param: 'model',
        message: `${JSON.stringify(name)} is a model the project's endpoints serve, not an alias: served models are changed in the configuration.`,
      });
    }
    throw new GatewayError('model_not_found', { param: 'model', message: `Project ${projectId} has no model alias ${JSON.stringify(name)}.` });
  };

  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, projectId: string) => Promise<void>): RouteDef =>
    keyed(services, 'inference', {
      method,
      pattern,
      family: 'models',
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle: (ctx, auth) => handle(ctx, auth.project.id),
    });

  return [
    route('POST', '/:project/v1/models', async (ctx, projectId) => {
      const body = parseAliasCreate(await ctx.req.json());
      if (servedIds(projectId).has(body.id)) {
        throw new GatewayError('model_exists', { param: 'id', message: `${JSON.stringify(body.id)} is a model this project serves; an alias may not shadow it.` });
      }
      requireTarget(projectId, body.target);
      if (!(await repo.create(projectId, body.id, body.target, services.now()))) {
        throw new GatewayError('model_exists', { param: 'id', message: `Project ${projectId} already has a model alias ${JSON.stringify(body.id)}; PATCH it to change its target.` });
      }
      ctx.reply.json(201, aliasItem(repo.get(projectId, body.id) as ModelAlias));
    }),
    route('PATCH', '/:project/v1/models/*model', async (ctx, projectId) => {
      const alias = requireAlias(projectId, ctx.req.params.model ?? '');
      const body = parseAliasUpdate(await ctx.req.json());
      requireTarget(projectId, body.target);
      await repo.update(projectId, alias.alias, body.target, services.now());
      ctx.reply.json(200, aliasItem(repo.get(projectId, alias.alias) as ModelAlias));
    }),
    route('DELETE', '/:project/v1/models/*model', async (ctx, projectId) => {
      await ctx.req.body();
      const alias = requireAlias(projectId, ctx.req.params.model ?? '');
      await repo.delete(projectId, alias.alias);
      ctx.reply.json(200, { id: alias.alias, object: 'model', deleted: true });
    }),
  ];
}
