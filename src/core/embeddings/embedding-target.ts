/**
 * Which embedding endpoint serves POST .../_semantic/router/v1/embeddings, where no slug names one: the
 * router base URL is a complete OpenAI base URL (issue 21), and embeddings there go to the project's
 * embedding endpoint. Reach is a direct route's (core/auth/authenticate.ts): a workspace the request
 * names, or the key is confined to, must be served by the endpoint; a key bound to one endpoint may use
 * that one only. A key that reaches the whole project and names nothing prefers the endpoints of its
 * default workspace, else takes any (a direct route would serve it on any endpoint too). Among several,
 * the lowest slug, as the router picks its own embedding endpoint. Pure.
 */
import { GatewayError } from '../../errors.js';
import type { EndpointRecord } from '../records.js';

export interface EmbeddingScope {
  /** The workspace the request runs in, resolved as for a routed turn; null: project-wide. */
  readonly workspaceId: string | null;
  /** The workspace was named by the request or imposed by the key's confinement (not a project default). */
  readonly confined: boolean;
  readonly keyEndpointId: string | null;
}

export interface EmbeddingTarget {
  readonly endpoint: EndpointRecord;
  /** The workspace the call is accounted to: the request's, or the endpoint's first when it serves another. */
  readonly workspaceId: string | null;
}

export function embeddingTarget(projectId: string, endpoints: readonly EndpointRecord[], scope: EmbeddingScope): EmbeddingTarget {
  const { workspaceId } = scope;
  const embedding = endpoints.filter((e) => e.kind === 'embedding');
  const serving = workspaceId === null ? embedding : embedding.filter((e) => e.workspaceIds.includes(workspaceId));
  const reach = serving.length > 0 || scope.confined ? serving : embedding;
  if (reach.length === 0) {
    throw new GatewayError('endpoint_not_found', {
      message: `Project ${projectId} has no embedding endpoint${scope.confined && workspaceId !== null ? ` serving workspace ${workspaceId}` : ''}.`,
    });
  }
  const keyed = scope.keyEndpointId === null ? reach : reach.filter((e) => e.id === scope.keyEndpointId);
  if (keyed.length === 0) {
    throw new GatewayError('endpoint_restricted', { message: 'The API key is restricted to one endpoint, which is not an embedding endpoint this request can reach.' });
  }
  const active = keyed.filter((e) => e.status === 'active').sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  const endpoint = active[0];
  if (!endpoint) {
    throw new GatewayError('endpoint_unavailable', { message: `No embedding endpoint of project ${projectId} this request can reach is active (${keyed.map((e) => `${e.slug}: ${e.status}`).join(', ')}).` });
  }
  const served = workspaceId !== null && endpoint.workspaceIds.includes(workspaceId);
  return { endpoint, workspaceId: served || workspaceId === null ? workspaceId : (endpoint.workspaceIds[0] ?? null) };
}
