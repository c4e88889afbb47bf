/**
 * One model turn against the endpoint's upstream: exactly one upstream request that reaches a model (the
 * client may first have tried a server it could not connect to), a deadline, abort wiring, response
 * normalization (buffered or streamed chunk by chunk), and exactly one usage row.
 */
import type { Config } from '../../config.js';
import { inputOf, type ContextInput } from '../../core/chat/context-window.js';
import type { Deadlines } from '../../core/chat/deadlines.js';
import type { ExecToolRunner } from '../../core/chat/exec-bridge.js';
import { restampCompletion } from '../../core/chat/completion-restamp.js';
import { normalizeCompletion } from '../../core/chat/normalize-completion.js';
import type { TurnContext, TurnUsage } from '../../core/chat/turn-context.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import type { UsageLedger } from '../../store/usage-ledger.js';
import { callUpstream, callUpstreamStream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import type { UpstreamClient } from '../../upstream/upstream-client.js';
import { failedCompletion } from '../../upstream/upstream-errors.js';
import type { MediaResolver } from './chat-media.js';
import { streamTurn } from './chat-stream.js';
import type { Services } from '../services.js';
import type { TurnCaller, TurnSink } from '../turn-io.js';
import { usageRow } from '../usage-row.js';

export interface ChatServices extends Services {
  readonly upstream: UpstreamClient;
  readonly usage: UsageLedger;
  readonly timeouts: Config['timeouts'];
  readonly features: Config['features'];
  /** Server-side image fetching for image_url parts (app/chat/chat-media.ts); absent: URLs pass as sent. */
  readonly media?: MediaResolver;
  /** The execution tools a chat request with `x_exec: true` may use (chat-exec-bridge.ts); absent: none. */
  readonly execTools?: ExecToolRunner;
}

export interface TurnRequest {
  readonly req: TurnCaller;
  /**
   * The route's Reply, or a stand-in that translates the chat answer into another API's shape on its way
   * out (app/responses/responses-reply.ts).
   */
  readonly reply: TurnSink;
  readonly endpoint: EndpointRecord;
  readonly body: Buffer;
  readonly stream: boolean;
  readonly turn: TurnContext;
  readonly deadlines: Deadlines;
  readonly promptEstimate: number | null;
  readonly account: { projectId: string; workspaceId: string | null; keyId: string; multiplier: number };
  readonly chat: ContextInput;
  /** Usage ledger label; `chat` when omitted (direct routes), `router` on semantic-router routes. */
  readonly route?: string;
  /**
   * Runs on a non-streamed completion after the turn is charged and before it is sent (audio output:
   * app/chat/chat-audio.ts); may add to the body. A throw answers with that error instead.
   */
  readonly complete?: (body: Record<string, unknown>) => Promise<void>;
}

/** `drained`: a stream the server ended at its drain deadline (billed for what was delivered). */
export type Outcome = 'completed' | 'aborted' | 'error' | 'timeout' | 'drained';

/** Cheap prompt estimate for turns whose upstream reported no usage (4 bytes per token, plus framing). */
function estimatePrompt(t: TurnRequest): number {
  if (t.promptEstimate !== null) return t.promptEstimate;
  const { texts, fixedTokens } = inputOf(t.chat);
  return texts.reduce((n, s) => n + Math.ceil(Buffer.byteLength(s) / 4), fixedTokens);
}

export async function dispatchTurn(services: ChatServices, t: TurnRequest): Promise<void> {
  // The client left before the call (a half-close: uWS closes on FIN, so no answer could arrive): nothing
  // was dispatched, so this is not a turn and writes no row (docs/decisions.md "Hostile bodies").
  if (t.req.aborted) return;
  // The deadline, the client's abort and the upstream's latency on the access log (upstream-call.ts).
  const deadline = new UpstreamDeadline(t.deadlines.requestMs, t.req, 'model', t.endpoint.tier, t.req.log);
  const started = deadline.started;

  let charged = false;
  let drained = false;
  const charge = (outcome: Outcome, usage: TurnUsage | null, errorCode: string | null = null): void => {
    if (charged) return;
    charged = true;
    // A timed-out call reached a model that worked on the prompt: billed its estimate, as a stream cut by its deadline is.
    const u = usage ?? { promptTokens: outcome === 'completed' || outcome === 'timeout' ? estimatePrompt(t) : 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: null, source: 'estimated' as const };
    t.req.log.promptTokens = u.promptTokens;
    t.req.log.completionTokens = u.completionTokens;
    services.usage.record(
      usageRow({
        requestId: t.req.requestId,
        account: t.account,
        endpointId: t.endpoint.id,
        route: t.route ?? 'chat',
        lane: t.turn.lane,
        multiplier: t.account.multiplier,
        outcome,
        usage: u,
        started,
        createdAt: services.now(),
        call: deadline,
        ttftMs: t.req.log.ttftMs,
        errorCode,
      }),
    );
  };

  try {
    // The endpoint is the target: the client picks one of its servers. One literal for both kinds of
    // turn: a spread of it plus `accept` made a new hidden class on every streamed turn (--log-ic).
    // undici's own timeouts are only a backstop behind our deadline timers; one value for both lets the
    // connection re-arm its timer instead of allocating a new one per phase.
    const call = {
      path: '/chat/completions',
      body: t.body,
      signal: deadline,
      accept: t.stream ? 'text/event-stream' : undefined,
      headersTimeoutMs: t.deadlines.requestMs + 1000,
      bodyTimeoutMs: t.deadlines.requestMs + 1000,
      requestId: t.req.requestId,
      // The request's trace when tracing is on: the upstream attempt is a child span (src/tracing).
      trace: t.req.trace,
    };
    // Below 400 only: an error status, a deadline or an unreachable server is thrown as the client's error.
    if (t.stream) {
      const answer = await callUpstreamStream(services.upstream, t.endpoint, call);
      await streamTurn(t, answer, deadline, () => deadline.timedOut, { charge, promptEstimate: () => estimatePrompt(t) });
    } else {
      // A graceful stop's deadline ends a turn still waiting on its model as it ends a stream: the call
      // is abandoned, the turn billed `drained`, the client answered 503 service_draining (retryable),
      // not left with a connection closed under it.
      t.reply.onDrainDeadline(() => {
        drained = true;
        deadline.abort();
      });
      const res = await callUpstream(services.upstream, t.endpoint, call, false);
      const completing = bufferedTurn(services, t, res.body, charge);
      if (completing) await completing;
    }
  } catch (err) {
    if (drained) {
      charge('drained', null, 'service_draining');
      throw new GatewayError('service_draining', { message: 'The server is shutting down; the request was ended before the model answered. Retry it.' });
    }
    const e = toGatewayError(err);
    charge(t.req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    if (!t.req.aborted) throw e;
  } finally {
    deadline.done();
  }
}

/** Answers the turn; a promise only when a completion hook (audio output) has work to wait for. */
function bufferedTurn(services: ChatServices, t: TurnRequest, raw: Buffer, charge: (o: Outcome, u: TurnUsage) => void): Promise<void> | undefined {
  const text = raw.toString('utf8');
  if (!t.complete && t.reply.jsonText) {
    const restamped = restampCompletion(text, t.turn);
    if (restamped) {
      charge('completed', restamped.usage);
      t.reply.jsonText(200, restamped.text);
      return undefined;
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GatewayError('internal_error', { message: 'The model server returned a response that is not JSON.' });
  }
  // Thrown as the turn's error (billed error with its code), never normalized into an empty answer.
  const failure = failedCompletion(json);
  if (failure !== null) throw failure;
  const { body, usage } = normalizeCompletion(json, t.turn, services.now, () => estimatePrompt(t));
  if (t.complete) {
    charge('completed', usage);
    return t.complete(body).then(() => t.reply.json(200, body));
  }
  // Charged (its row in the usage journal) before the answer is handed to the socket: a SIGKILL landing
  // between the two must not leave an answered turn unbilled (it did, 1 in ~400 kills under load).
  charge('completed', usage);
  t.reply.json(200, body);
  return undefined;
}
