/**
 * An embeddings request once its key is admitted (routes/embeddings.ts has the three ways the endpoint is
 * found; batch lines take the model-addressed one): the endpoint checked to serve embeddings, its budget,
 * then one upstream call carrying the client's bytes with only `model` replaced (prompt-only-call.ts).
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { clientEmbeddings } from '../../core/embeddings/embedding-response.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { parseEmbeddingsRequest, type EmbeddingsRequest } from '../../schemas/embeddings.js';
import type { ChatServices } from '../chat/chat-dispatch.js';
import { modelAccess, requireBudget, wrongEndpointKind, type EndpointAccess, type WorkspaceChoice } from '../endpoint-access.js';
import type { ByteExchange } from '../turn-io.js';
import { servePromptOnly } from './prompt-only-call.js';

/** Usage ledger label of every embeddings call, direct or through a router base URL (not a routed turn). */
const ROUTE = 'embeddings';

export function assertServesEmbeddings(endpoint: EndpointRecord): void {
  if (endpoint.kind !== 'embedding') {
    throw wrongEndpointKind(endpoint, '/v1/embeddings needs an embedding endpoint');
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

export interface EmbeddingsBody {
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly request: EmbeddingsRequest;
}

/** A body already read as JSON (`parsed`), validated. */
export function embeddingsBodyFrom(raw: Buffer, parsed: unknown): EmbeddingsBody {
  const request = parseEmbeddingsRequest(parsed);
  // The schema accepted a JSON object.
  return { raw, parsed: parsed as Record<string, unknown>, request };
}

/** The endpoint a request reached serves embeddings, within its budget. */
export function admitEmbeddings(services: ChatServices, ctx: ByteExchange, auth: AuthenticatedKey, access: EndpointAccess): void {
  assertServesEmbeddings(access.endpoint);
  requireBudget(ctx, services, auth, access);
}

/** One upstream call (prompt-only-call.ts). */
export function serveEmbeddings(services: ChatServices, ctx: ByteExchange, auth: AuthenticatedKey, access: EndpointAccess, body: EmbeddingsBody): Promise<void> {
  return servePromptOnly(services, ctx, auth, access, {
    path: '/embeddings',
    route: ROUTE,
    raw: body.raw,
    parsed: body.parsed,
    answer: (raw) => clientEmbeddings(raw, body.request.model, body.request.input, 'an embeddings', { encodingFormat: body.request.encoding_format ?? 'float', dimensions: body.request.dimensions ?? null }),
  });
}

/** `/{project}/v1/embeddings` (issue 20): the endpoint the body's `model` names in the workspace chosen. */
export async function serveEmbeddingsByModel(services: ChatServices, ctx: ByteExchange, auth: AuthenticatedKey, body: EmbeddingsBody, choice: WorkspaceChoice): Promise<void> {
  const access = modelAccess(services, auth, { model: body.request.model, kind: 'embedding', route: '/v1/embeddings' }, choice);
  ctx.req.log.endpoint = access.endpoint.slug;
  admitEmbeddings(services, ctx, auth, access);
  await serveEmbeddings(services, ctx, auth, access, body);
}
