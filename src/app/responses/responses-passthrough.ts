/**
 * A Responses API turn on an endpoint whose servers speak the Responses API (`upstream.api: responses`,
 * docs/decisions.md "Upstream Responses API"): the client's bytes go to `{base_url}/responses` with only
 * `model` replaced by the upstream model (as chat passthrough does), and the answer comes back as the
 * server wrote it: buffered, or its SSE relayed chunk by chunk as it arrives (never held for a whole
 * event). Usage for the ledger is read from the Response's `usage` (buffered) or the stream's terminal
 * event. One upstream request, the tier's deadlines, abort wiring and one usage row, as in chat-dispatch.ts.
 */
import { StringDecoder } from 'node:string_decoder';
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { resolveServiceTier } from '../../core/chat/service-tier.js';
import type { TurnUsage } from '../../core/chat/turn-context.js';
import { spliceTopLevel } from '../../core/json-splice.js';
import type { EndpointRecord } from '../../core/records.js';
import { sequenceOf, usageOfEvent, usageOfResponse } from '../../core/responses/upstream-usage.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import { SseDecoder, type SseEvent } from '../../upstream/sse-decoder.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import type { UpstreamResponse } from '../../upstream/upstream-client.js';
import type { ChatServices, Outcome } from '../chat/chat-dispatch.js';
import type { ByteExchange } from '../turn-io.js';
import { usageRow } from '../usage-row.js';

export interface PassthroughTurn {
  readonly ctx: ByteExchange;
  readonly auth: AuthenticatedKey;
  readonly endpoint: EndpointRecord;
  readonly workspaceId: string | null;
  /** The client's body bytes and their parse. */
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  /** Usage ledger label, as for translated turns. */
  readonly route: 'chat' | 'router';
}

/** The upstream body: the client's bytes with `model` replaced (SPEC Passthrough rule 1). */
export function passthroughBody(raw: Buffer, parsed: Record<string, unknown>, upstreamModel: string): Buffer {
  const spliced = spliceTopLevel(raw, new Map([['model', JSON.stringify(upstreamModel)]]));
  return spliced ?? Buffer.from(JSON.stringify({ ...parsed, model: upstreamModel }));
}

/** A Responses API streaming `error` event (the shape the SDK raises as an APIError). */
function errorEvent(e: GatewayError, after: number | null): string {
  const event = { type: 'error', code: e.code, message: e.message, param: e.param ?? null, sequence_number: after === null ? 0 : after + 1 };
  return `event: error\ndata: ${JSON.stringify(event)}\n\n`;
}

export async function passThroughResponse(services: ChatServices, t: PassthroughTurn): Promise<void> {
  const { req, reply } = t.ctx;
  const stream = t.parsed.stream === true;
  const deadlines = deadlinesFor(t.endpoint.tier, services.timeouts, false);
  const tier = resolveServiceTier(t.parsed.service_tier);
  const deadline = new UpstreamDeadline(deadlines.requestMs, req, 'model', t.endpoint.tier, req.log);
  const started = deadline.started;

  let charged = false;
  const charge = (outcome: Outcome, usage: TurnUsage | null, errorCode: string | null = null): void => {
    if (charged) return;
    charged = true;
    // No usage reported: the prompt at 4 bytes a token for a completed turn, as chat-dispatch.ts estimates.
    const u = usage ?? { promptTokens: outcome === 'completed' ? Math.ceil(t.raw.byteLength / 4) : 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: null, source: 'estimated' as const };
    req.log.promptTokens = u.promptTokens;
    req.log.completionTokens = u.completionTokens;
    services.usage.record(
      usageRow({
        requestId: req.requestId,
        account: { projectId: t.auth.project.id, workspaceId: t.workspaceId, keyId: t.auth.key.id },
        endpointId: t.endpoint.id,
        route: t.route,
        lane: tier.lane,
        multiplier: tier.multiplier,
        outcome,
        usage: u,
        started,
        createdAt: services.now(),
        call: deadline,
        ttftMs: req.log.ttftMs,
        errorCode,
      }),
    );
  };

  try {
    const call = {
      path: '/responses',
      body: passthroughBody(t.raw, t.parsed, t.endpoint.upstream.model),
      signal: deadline,
      accept: stream ? 'text/event-stream' : undefined,
      headersTimeoutMs: deadlines.requestMs + 1000,
      bodyTimeoutMs: deadlines.requestMs + 1000,
      requestId: req.requestId,
    };
    if (!stream) {
      const res = await callUpstream(services.upstream, t.endpoint, call, false);
      let json: unknown;
      try {
        json = JSON.parse(res.body.toString('utf8'));
      } catch {
        throw new GatewayError('internal_error', { message: 'The model server returned a response that is not JSON.' });
      }
      charge('completed', usageOfResponse(json));
      reply.send(200, res.body, 'application/json');
      return;
    }
    const res = await callUpstream(services.upstream, t.endpoint, call, true);
    await relay(t, res, deadline, deadlines.idleMs, () => deadline.timedOut, charge);
  } catch (err) {
    const e = toGatewayError(err);
    charge(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    if (!req.aborted) throw e;
  } finally {
    deadline.done();
  }
}

/** The upstream SSE written through as it arrives; a copy is decoded only to find the terminal event. */
function relay(t: PassthroughTurn, res: UpstreamResponse, controller: UpstreamDeadline, idleMs: number, timedOut: () => boolean, charge: (o: Outcome, u: TurnUsage | null, errorCode: string | null) => void): Promise<void> {
  const { req, reply } = t.ctx;
  const decoder = new SseDecoder();
  const utf8 = new StringDecoder('utf8');
  let terminal = false;
  let usage: TurnUsage | null = null;
  let lastSequence: number | null = null;
  let idleExpired = false;
  reply.setHeader('Cache-Control', 'no-cache');
  reply.beginStream(200, 'text/event-stream');
  const idle = setTimeout(() => {
    idleExpired = true;
    controller.abort();
  }, idleMs);

  return new Promise<void>((resolve) => {
    let ended = false;
    const finish = (outcome: Outcome, error: GatewayError | null): void => {
      if (ended) return;
      ended = true;
      clearTimeout(idle);
      if (error && reply.open) reply.write(errorEvent(error, lastSequence));
      charge(outcome, usage, error?.code ?? null);
      reply.endStream();
      resolve();
    };
    reply.onDrainDeadline(() => {
      finish('drained', new GatewayError('service_draining', { message: 'The server is shutting down; the stream was ended before the model finished. Retry the request.' }));
      controller.abort();
    });
    const scan = (events: readonly SseEvent[]): void => {
      for (const event of events) {
        const seen = usageOfEvent(event);
        if (seen.terminal) {
          terminal = true;
          usage = seen.usage;
        }
        lastSequence = sequenceOf(event.data) ?? lastSequence;
      }
    };
    res.body.on('data', (buf: Buffer) => {
      if (ended) return;
      idle.refresh();
      if (req.log.ttftMs === undefined) req.log.ttftMs = performance.now() - req.startedAt;
      scan(decoder.push(utf8.write(buf)));
      if (reply.open && !reply.write(buf)) {
        res.body.pause();
        reply.onWritable(() => res.body.resume());
      }
    });
    res.body.on('end', () => {
      scan(decoder.push(utf8.end()).concat(decoder.flush()));
      if (terminal) finish('completed', null);
      else finish('error', new GatewayError('internal_error', { message: 'The model server ended the stream before it was complete.' }));
    });
    res.body.on('error', () => {
      if (req.aborted) return finish('aborted', null);
      if (timedOut() || idleExpired) {
        const which = idleExpired ? `sent nothing for ${idleMs / 1000} s` : 'did not finish within the deadline';
        return finish('timeout', new GatewayError('timeout', { message: `The model ${which}.` }));
      }
      finish('error', new GatewayError('internal_error', { message: 'The connection to the model server failed mid-stream.' }));
    });
  });
}
