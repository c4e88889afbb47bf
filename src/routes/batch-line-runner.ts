/**
 * One batch line through the very route handler a live request to `/{project}/v1/chat/completions` or
 * `/{project}/v1/embeddings` runs (docs/decisions.md "Batches"): authentication of the creating key (read
 * again from the store, so a key revoked or expired since stops the batch's lines), the request and token
 * limiters, the endpoint the body's `model` names, its budget, the turn with its deadline, normalization
 * and usage row. The answer is the status and body a client would have received.
 *
 * How the key gets in: each line carries a one-off bearer value that exists only in this process's memory
 * for the line's lifetime, resolved by a catalog wrapper seen by these handlers only; it stands for the
 * stored key (minus its IP filter: the creating request passed it, and lines come from the gateway).
 *
 * A line refused by the request or token limiter (429 rate_limit_exceeded / token_rate_limit_exceeded,
 * nothing spent) is not answered: it is handed back to wait its Retry-After.
 */
import type { ApiKeyRecord, KeyCredential } from '../core/records.js';
import type { BatchEndpoint } from '../core/batches/batch-lines.js';
import { hashKeyValue, mintKeyValue } from '../core/auth/key-token.js';
import { serveRoute, type RouteDef } from '../http/server.js';
import { createSyntheticRequest } from '../http/synthetic-request.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { chatCompletionsRoutes } from './chat-completions.js';
import { embeddingsRoutes } from './embeddings.js';

export interface BatchLineJob {
  readonly projectId: string;
  readonly keyId: string;
  /** The workspace the batch's creation request named, and how (`X-Workspace-Id`, `X-Service-Workspace`). */
  readonly workspaceNamed: string | null;
  readonly workspaceNamedBy: string;
  readonly url: BatchEndpoint;
  readonly body: Buffer;
}

export type BatchLineResult =
  | { readonly kind: 'answered'; readonly statusCode: number; readonly requestId: string; readonly body: string }
  | { readonly kind: 'deferred'; readonly retryAfterMs: number };

export interface BatchLineRunner {
  run(job: BatchLineJob): Promise<BatchLineResult>;
}

const PATTERNS: Record<BatchEndpoint, string> = {
  '/v1/chat/completions': '/:project/v1/chat/completions',
  '/v1/embeddings': '/:project/v1/embeddings',
};

/** Waits (not failures): the limiters refused before anything reached a model. */
const LIMITER_CODES = new Set(['rate_limit_exceeded', 'token_rate_limit_exceeded']);

export function createBatchLineRunner(services: ChatServices, findKey: (projectId: string, keyId: string) => ApiKeyRecord | null): BatchLineRunner {
  const lineKeys = new Map<string, KeyCredential>();
  const catalog: ChatServices['catalog'] = {
    findCredential: (hash) => lineKeys.get(hash) ?? null,
    project: (ref) => services.catalog.project(ref),
    workspaces: (projectId) => services.catalog.workspaces(projectId),
    workspaceProject: (workspaceId) => services.catalog.workspaceProject(workspaceId),
    endpoint: (projectId, slug) => services.catalog.endpoint(projectId, slug),
    endpoints: (projectId) => services.catalog.endpoints(projectId),
    reload: () => undefined,
    close: () => undefined,
  };
  const lineServices: ChatServices = { ...services, catalog };
  const routes = [...chatCompletionsRoutes(lineServices), ...embeddingsRoutes(lineServices)];
  const routeOf = (url: BatchEndpoint): RouteDef => {
    const route = routes.find((r) => r.method === 'POST' && r.pattern === PATTERNS[url]);
    if (!route) throw new Error(`no route serves ${url}`);
    return route;
  };

  return {
    async run(job) {
      const route = routeOf(job.url);
      const token = mintKeyValue('batch');
      const hash = hashKeyValue(token);
      const key = findKey(job.projectId, job.keyId);
      const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
      if (job.workspaceNamed !== null) headers[job.workspaceNamedBy === 'X-Service-Workspace' ? 'x-service-workspace' : 'x-workspace-id'] = job.workspaceNamed;
      // A key deleted since: the token resolves to nothing and the line is answered 401 invalid_api_key.
      if (key) lineKeys.set(hash, { key: { ...key, ipFilter: null }, validUntil: null });
      const synthetic = createSyntheticRequest({ method: 'POST', path: `/${job.projectId}${job.url}`, headers, body: job.body, idPrefix: route.idPrefix ?? 'req_' });
      synthetic.req.params = { project: job.projectId };
      try {
        const answer = await synthetic.serve(() => serveRoute(route, { req: synthetic.req, reply: synthetic.reply, route, draining: false }) ?? Promise.resolve());
        if (answer.errorCode !== null && LIMITER_CODES.has(answer.errorCode)) {
          const seconds = Number(answer.headers.get('retry-after') ?? '1');
          return { kind: 'deferred', retryAfterMs: Math.max(1, Number.isFinite(seconds) ? seconds : 1) * 1000 };
        }
        return { kind: 'answered', statusCode: answer.status, requestId: answer.requestId, body: answer.body };
      } finally {
        lineKeys.delete(hash);
      }
    },
  };
}
