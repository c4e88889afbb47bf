/**
 * One batch line through the use cases a live request to `/{project}/v1/chat/completions` or
 * `/{project}/v1/embeddings` runs (docs/decisions.md "Batches"): authentication of the creating key (read
 * again from the store, so a key revoked or expired since stops the batch's lines), the request and token
 * limiters, the endpoint the body's `model` names in the workspace the batch's creation named, its budget,
 * the turn with its deadline, normalization and usage row. The answer is the status and body a client
 * would have received.
 *
 * The stored key stands for itself minus its IP filter: the creating request passed it, and lines come
 * from the gateway. A line refused by the request or token limiter (429 rate_limit_exceeded /
 * token_rate_limit_exceeded, nothing spent) is not answered: it is handed back to wait its Retry-After.
 */
import { authenticateKey, type AuthenticatedKey } from '../../core/auth/authenticate.js';
import { mintKeyValue } from '../../core/auth/key-token.js';
import type { BatchEndpoint } from '../../core/batches/batch-lines.js';
import { limitClassOf } from '../../core/limits/rate-limiter.js';
import type { ApiKeyRecord, KeyCredential } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { newRequestId } from '../../request-id.js';
import type { ChatServices } from '../chat/chat-dispatch.js';
import { chatBodyFrom, serveChatByModel } from '../chat/chat-completion.js';
import { DetachedCaller } from '../detached-caller.js';
import type { WorkspaceChoice } from '../endpoint-access.js';
import { admitKey } from '../key-admission.js';
import { embeddingsBodyFrom, serveEmbeddingsByModel } from '../prompt-only/embeddings-call.js';
import { RecordedAnswer } from '../recorded-answer.js';

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

/** Per endpoint: the id prefix and the limiter class of its live route. */
const LIVE_ROUTE: Record<BatchEndpoint, { readonly idPrefix: string; readonly family: string; readonly pattern: string }> = {
  '/v1/chat/completions': { idPrefix: 'chatcmpl-', family: 'chat', pattern: '/:project/v1/chat/completions' },
  '/v1/embeddings': { idPrefix: 'req_', family: 'embeddings', pattern: '/:project/v1/embeddings' },
};

/** Waits (not failures): the limiters refused before anything reached a model. */
const LIMITER_CODES = new Set(['rate_limit_exceeded', 'token_rate_limit_exceeded']);

/** The batch's key as the live routes authenticate one (SPEC Authentication); null: deleted since (401 invalid_api_key). */
function authenticateLine(services: ChatServices, key: ApiKeyRecord | null, projectId: string, now: number): AuthenticatedKey {
  const credential: KeyCredential | null = key ? { key: { ...key, ipFilter: null }, validUntil: null } : null;
  const check = { authorization: `Bearer ${mintKeyValue('batch')}`, clientIp: () => '127.0.0.1', projectRef: projectId, scope: 'inference' as const, now };
  return authenticateKey(check, { findCredential: () => credential }, services.catalog.project);
}

/** The workspace as the batch's creation request named it (routes/guard.ts namedWorkspace of its headers). */
function workspaceOf(job: BatchLineJob): WorkspaceChoice {
  if (job.workspaceNamed === null) return { named: null, namedBy: '' };
  return { named: job.workspaceNamed.trim(), namedBy: job.workspaceNamedBy === 'X-Service-Workspace' ? 'X-Service-Workspace' : 'X-Workspace-Id' };
}

async function serveLine(services: ChatServices, key: ApiKeyRecord | null, job: BatchLineJob, ctx: { req: DetachedCaller; reply: RecordedAnswer }): Promise<void> {
  const now = services.now();
  const live = LIVE_ROUTE[job.url];
  const auth = await admitKey(services, ctx.reply, authenticateLine(services, key, job.projectId, now), limitClassOf(live.family, 'POST', live.pattern), now);
  // The line's body was parsed and re-serialized at validation (core/batches/batch-lines.ts): JSON, an object.
  const parsed: unknown = JSON.parse(job.body.toString('utf8'));
  if (job.url === '/v1/chat/completions') await serveChatByModel(services, ctx, auth, chatBodyFrom(job.body, parsed), workspaceOf(job));
  else await serveEmbeddingsByModel(services, ctx, auth, embeddingsBodyFrom(job.body, parsed), workspaceOf(job));
}

export function createBatchLineRunner(services: ChatServices, findKey: (projectId: string, keyId: string) => ApiKeyRecord | null): BatchLineRunner {
  return {
    async run(job) {
      const reply = new RecordedAnswer();
      const req = new DetachedCaller({ requestId: newRequestId(LIVE_ROUTE[job.url].idPrefix), headers: { 'content-type': 'application/json' } });
      let refusal: GatewayError | null = null;
      try {
        await serveLine(services, findKey(job.projectId, job.keyId), job, { req, reply });
      } catch (err) {
        if (err instanceof GatewayError) refusal = err;
        reply.error(err);
      }
      // A turn that ended without an answer is the gateway's failure, as on a live request.
      if (!reply.began) reply.error(new GatewayError('internal_error'));
      if (refusal !== null && LIMITER_CODES.has(refusal.code)) {
        const seconds = Number(refusal.headers?.['Retry-After'] ?? '1');
        return { kind: 'deferred', retryAfterMs: Math.max(1, Number.isFinite(seconds) ? seconds : 1) * 1000 };
      }
      // The line's answer is stored next, not sent: its usage row is journaled first (usage-journal.ts).
      await services.usage.journaled();
      return { kind: 'answered', statusCode: reply.status, requestId: req.requestId, body: reply.body };
    },
  };
}
