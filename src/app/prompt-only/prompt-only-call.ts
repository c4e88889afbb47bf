/**
 * The one upstream exchange of the routes whose answers bill prompt tokens only (embeddings, rerank,
 * score): the client's body with only `model` replaced, under the tier's deadline, aborted with the
 * client, the answer read whole under the answer cap and rewritten by `answer`, and exactly one usage row
 * once the call was made.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import type { ClientEmbeddings, EmbeddingUsage } from '../../core/embeddings/embedding-response.js';
import { spliceTopLevel } from '../../core/json-splice.js';
import { GatewayError } from '../../errors.js';
import { readCapped } from '../../upstream/answer-cap.js';
import { startAudioCall } from '../audio/audio-call.js';
import type { ChatServices, Outcome } from '../chat/chat-dispatch.js';
import type { EndpointAccess } from '../endpoint-access.js';
import type { ByteExchange } from '../turn-io.js';
import { usageRow } from '../usage-row.js';

export interface PromptOnlyCall {
  /** The upstream path (`/embeddings`, `/rerank`, `/score`). */
  readonly path: string;
  /** The usage ledger's route label. */
  readonly route: string;
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  /** The client's answer from the upstream's bytes (model echoed, usage read or estimated). */
  answer(raw: Buffer): ClientEmbeddings;
}

export async function servePromptOnly(services: ChatServices, ctx: ByteExchange, auth: AuthenticatedKey, access: EndpointAccess, c: PromptOnlyCall): Promise<void> {
  const { req, reply } = ctx;
  const { endpoint, workspaceId } = access;
  const forwarded =
    spliceTopLevel(c.raw, new Map([['model', JSON.stringify(endpoint.upstream.model)]])) ?? Buffer.from(JSON.stringify({ ...c.parsed, model: endpoint.upstream.model }));
  const { response, deadline } = startAudioCall(services, req, endpoint, { path: c.path, body: forwarded }, deadlinesFor(endpoint.tier, services.timeouts, false));
  const charge = (outcome: Outcome, usage: EmbeddingUsage | null, errorCode: string | null): void => {
    services.usage.record(
      usageRow({
        requestId: req.requestId,
        account: { projectId: auth.project.id, workspaceId, keyId: auth.key.id },
        endpointId: endpoint.id,
        route: c.route,
        lane: 'default',
        multiplier: 1,
        outcome,
        usage,
        started: deadline.started,
        createdAt: services.now(),
        call: deadline,
        ttftMs: null,
        errorCode,
      }),
    );
  };
  let answer: ClientEmbeddings;
  try {
    const res = await response;
    // Read whole inside the deadline: a server that stalls mid-body times out like one that never answers.
    const raw = await readCapped(res.body);
    deadline.done();
    req.log.upstreamMs = performance.now() - deadline.started;
    answer = c.answer(raw);
  } catch (err) {
    const e = err instanceof GatewayError ? err : deadline.failure(err);
    deadline.done();
    charge(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    if (req.aborted) return;
    throw e;
  }
  req.log.promptTokens = answer.usage.promptTokens;
  charge('completed', answer.usage, null);
  reply.send(200, answer.body, 'application/json');
}
