/**
 * Every path family in SPEC has a route from day one, so clients get 501 not_implemented in the error
 * envelope (not a 404 that reads like a typo) until the family's issue lands and replaces its entry.
 * The key is checked first with the family's scope, so a pending route never answers an anonymous caller
 * differently from a live one.
 */
import type { Scope } from '../config.js';
import { GatewayError } from '../errors.js';
import type { RouteDef } from '../http/server.js';
import { keyAuth } from './guard.js';
import type { Services } from '../app/services.js';

type Method = RouteDef['method'];

const PENDING: readonly (readonly [family: string, method: Method, pattern: string])[] = [
  ['chat', 'POST', '/:project/:endpoint/v1/chat/completions'],
  ['router', 'POST', '/:project/_semantic/router/v1/chat/completions'],
  ['router', 'POST', '/:project/:workspace/_semantic/router/v1/chat/completions'],
  ['router', 'POST', '/:project/_semantic/router/v1/chat/completions/multimodel'],
  ['router', 'POST', '/:project/_semantic/router/v1/responses'],
  ['rerank', 'POST', '/:project/:endpoint/v1/rerank'],
  ['rerank', 'POST', '/:project/:endpoint/v1/score'],
  ['audio', 'POST', '/:project/:endpoint/v1/audio/transcriptions'],
  ['audio', 'POST', '/:project/:endpoint/v1/audio/translations'],
  ['audio', 'POST', '/:project/:endpoint/v1/audio/speech'],
  ['realtime', 'GET', '/:project/:endpoint/v1/realtime'],
  ['models', 'POST', '/:project/v1/models'],
  ['models', 'PATCH', '/:project/v1/models/*model'],
  ['models', 'DELETE', '/:project/v1/models/*model'],
  ['management', 'GET', '/:project/v1/management/api-keys'],
  ['management', 'POST', '/:project/v1/management/api-keys'],
  ['management', 'GET', '/:project/v1/management/api-keys/:key'],
  ['management', 'DELETE', '/:project/v1/management/api-keys/:key'],
  ['management', 'POST', '/:project/v1/management/api-keys/:key/rotate'],
  ['management', 'GET', '/:project/v1/management/semantic-router/config'],
  ['management', 'PATCH', '/:project/v1/management/semantic-router/config'],
  ['management', 'GET', '/:project/v1/management/semantic-router/rules'],
  ['management', 'POST', '/:project/v1/management/semantic-router/rules'],
  ['management', 'PATCH', '/:project/v1/management/semantic-router/rules/:rule'],
  ['management', 'DELETE', '/:project/v1/management/semantic-router/rules/:rule'],
  ['management', 'GET', '/:project/v1/management/semantic-router/decisions'],
  ['management', 'GET', '/:project/v1/management/semantic-router/health'],
  ['webhooks', 'GET', '/:project/v1/webhooks'],
  ['webhooks', 'POST', '/:project/v1/webhooks'],
  ['webhooks', 'GET', '/:project/v1/webhooks/:webhook'],
  ['webhooks', 'PUT', '/:project/v1/webhooks/:webhook'],
  ['webhooks', 'DELETE', '/:project/v1/webhooks/:webhook'],
  ['webhooks', 'POST', '/:project/v1/webhooks/:webhook/test'],
  ['webhooks', 'GET', '/:project/v1/webhooks/:webhook/deliveries'],
  ['files', 'GET', '/:project/v1/files'],
  ['files', 'POST', '/:project/v1/files'],
  ['files', 'GET', '/:project/v1/files/:file'],
  ['files', 'DELETE', '/:project/v1/files/:file'],
  ['files', 'GET', '/:project/v1/files/:file/content'],
  ['uploads', 'POST', '/:project/v1/uploads'],
  ['batches', 'GET', '/:project/v1/batches'],
  ['batches', 'POST', '/:project/v1/batches'],
  ['batches', 'GET', '/:project/v1/batches/:batch'],
  ['batches', 'POST', '/:project/v1/batches/:batch/cancel'],
  ['conversations', 'POST', '/:project/v1/conversations'],
  ['conversations', 'GET', '/:project/v1/conversations/:conversation'],
  ['conversations', 'DELETE', '/:project/v1/conversations/:conversation'],
  ['conversations', 'GET', '/:project/v1/conversations/:conversation/items'],
  ['conversations', 'POST', '/:project/v1/conversations/:conversation/items'],
  ['responses', 'POST', '/:project/v1/responses'],
  ['responses', 'GET', '/:project/v1/responses/:response'],
  ['responses', 'DELETE', '/:project/v1/responses/:response'],
  ['slos', 'GET', '/:project/v1/slos'],
  ['slos', 'POST', '/:project/v1/slos'],
  ['dashboard', 'GET', '/auth/:provider'],
  ['dashboard', 'GET', '/auth/:provider/callback'],
];

const SCOPE_OF_FAMILY: Record<string, Scope | null> = {
  management: 'management',
  webhooks: 'management',
  exec: 'execution',
  dashboard: null,
};

/** Pending routes minus those a landed family now serves (matched on method and pattern). */
export function notImplementedRoutes(services: Services, implemented: readonly RouteDef[]): RouteDef[] {
  const served = new Set(implemented.map((r) => `${r.method} ${r.pattern}`));
  return PENDING.filter(([, method, pattern]) => !served.has(`${method} ${pattern}`)).map(([family, method, pattern]): RouteDef => {
    const scope = family in SCOPE_OF_FAMILY ? SCOPE_OF_FAMILY[family] : 'inference';
    return {
      method,
      pattern,
      family,
      ...(pattern.includes('/chat/completions') ? { idPrefix: 'chatcmpl-' } : {}),
      auth: scope ? keyAuth(services, scope) : { kind: 'public' },
      handle: async (ctx) => {
        await ctx.req.body();
        throw new GatewayError('not_implemented', { message: `${method} ${pattern.replace(/:(\w+)/g, '{$1}')} is not implemented yet.` });
      },
    };
  });
}
