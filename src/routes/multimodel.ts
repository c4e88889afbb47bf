/**
 * POST /{project}/_semantic/router/v1/chat/completions/multimodel (SPEC "Semantic router behaviour" 10):
 * the decomposing variant of the routed chat route. The route resolves the workspace and reads the body
 * (`n` checked apart: not capped on this route); the turn is app/multimodel/multimodel-turn.ts.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseChatRequest } from '../schemas/chat-request.js';
import { describe } from '../core/describe-value.js';
import type { RouterChatServices } from '../app/chat/router-chat-services.js';
import { serveMultimodelTurn, type MultimodelBody } from '../app/multimodel/multimodel-turn.js';
import { keyed } from './guard.js';
import { routerWorkspace } from './semantic-router-chat.js';

type Json = Record<string, unknown>;

/** SPEC behaviour 10: `n` is not capped on this route (the shared schema caps it at 128 elsewhere). */
function choiceCount(n: unknown): number {
  if (n === undefined || n === null) return 1;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new GatewayError('invalid_request', { param: 'n', message: `n must be a positive integer; got ${describe(n)}.` });
  }
  return n;
}

async function readBody(ctx: RouteContext): Promise<MultimodelBody> {
  const raw = await ctx.req.body();
  const parsed = parseJsonBody(raw);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  const body = parsed as Json;
  const n = choiceCount(body.n);
  const { n: _n, ...rest } = body;
  return { raw, parsed: body, chat: parseChatRequest(rest), n };
}

async function multimodelTurn(services: RouterChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const workspace = routerWorkspace(ctx, services, auth);
  const body = await readBody(ctx);
  return serveMultimodelTurn(services, ctx, auth, workspace, body);
}

export function multimodelRoutes(services: RouterChatServices): RouteDef[] {
  return [
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/_semantic/router/v1/chat/completions/multimodel',
      family: 'router',
      idPrefix: 'chatcmpl-',
      handle: (ctx, auth) => multimodelTurn(services, ctx, auth),
    }),
  ];
}
