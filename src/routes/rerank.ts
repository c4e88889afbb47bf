/**
 * POST /{project}/{endpoint}/v1/rerank and /v1/score on rerank endpoints, and the same bodies on the
 * project base URL (/{project}/v1/rerank, /v1/score), where the body's `model` names the endpoint
 * (core/models/resolve-model.ts). The shapes are vLLM's (Jina / Cohere clients' rerank; vLLM's score);
 * schemas/rerank.ts. Admission is the direct routes': key (inference scope and request limiters),
 * endpoint, kind and status, budget. One upstream call carries the client's bytes with only `model`
 * replaced; the answer goes back with `model` echoing the request's, as embeddings do. One usage row per
 * call (route `rerank` or `score`, prompt tokens only: the server's usage, else an estimate of the texts).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { clientEmbeddings } from '../core/embeddings/embedding-response.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseRerankRequest, parseScoreRequest, rerankTexts, scoreTexts } from '../schemas/rerank.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { servePromptOnly } from '../app/prompt-only/prompt-only-call.js';
import { requireBudget, type EndpointAccess } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel, wrongEndpointKind } from './guard.js';

type Operation = 'rerank' | 'score';

export function assertServesRerank(endpoint: EndpointRecord, op: Operation): void {
  if (endpoint.kind !== 'rerank') {
    throw wrongEndpointKind(endpoint, `/v1/${op} needs a rerank endpoint`);
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

interface RerankBody {
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly model: string;
  /** Every text the request sends: the charge when the server reports no usage. */
  readonly texts: readonly string[];
}

async function readBody(ctx: RouteContext, op: Operation): Promise<RerankBody> {
  const raw = await ctx.req.body();
  const parsed = parseJsonBody(raw);
  const texts = op === 'rerank' ? rerankTexts(parseRerankRequest(parsed)) : scoreTexts(parseScoreRequest(parsed));
  // The schema accepted a JSON object with a string `model`.
  const body = parsed as Record<string, unknown>;
  return { raw, parsed: body, model: body.model as string, texts };
}

async function direct(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey, op: Operation): Promise<void> {
  const access = requireEndpoint(ctx.req, services, auth);
  assertServesRerank(access.endpoint, op);
  requireBudget(ctx, services, auth, access);
  await serve(services, ctx, auth, access, op, await readBody(ctx, op));
}

async function byModel(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey, op: Operation): Promise<void> {
  const body = await readBody(ctx, op);
  const access = requireModel(ctx.req, services, auth, { model: body.model, kind: 'rerank', route: `/v1/${op}` });
  assertServesRerank(access.endpoint, op);
  requireBudget(ctx, services, auth, access);
  await serve(services, ctx, auth, access, op, body);
}

/** One upstream call (prompt-only-call.ts). */
function serve(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey, access: EndpointAccess, op: Operation, body: RerankBody): Promise<void> {
  return servePromptOnly(services, ctx, auth, access, {
    path: `/${op}`,
    route: op,
    raw: body.raw,
    parsed: body.parsed,
    answer: (raw) => clientEmbeddings(raw, body.model, body.texts, `a ${op}`),
  });
}

export function rerankRoutes(services: ChatServices): RouteDef[] {
  const family = 'rerank';
  return (['rerank', 'score'] as const).flatMap((op): RouteDef[] => [
    keyed(services, 'inference', { method: 'POST', pattern: `/:project/:endpoint/v1/${op}`, family, handle: (ctx, auth) => direct(services, ctx, auth, op) }),
    keyed(services, 'inference', { method: 'POST', pattern: `/:project/v1/${op}`, family, handle: (ctx, auth) => byModel(services, ctx, auth, op) }),
  ]);
}
