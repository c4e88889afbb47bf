/**
 * One buffered model turn the harness adds or serves (a compaction summary, a corrective retry, a turn
 * served buffered so its answer can be repaired): deadline, abort wiring, error mapping, normalization,
 * and its own usage row. Rows are keyed `<request id>.<label>`, except the client's first turn, which
 * keeps the request id, so every row of a request is found by the id's prefix. The x_exec bridge's turns
 * come through here too (labels t2, t3, ...).
 */
import type { Deadlines } from '../../core/chat/deadlines.js';
import { normalizeCompletion } from '../../core/chat/normalize-completion.js';
import type { TurnContext, TurnUsage } from '../../core/chat/turn-context.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import type { TurnCaller } from '../turn-io.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import { failedCompletion } from '../../upstream/upstream-errors.js';
import { usageRow } from '../usage-row.js';
import type { ChatServices, Outcome } from './chat-dispatch.js';

type Json = Record<string, unknown>;

export interface HarnessCall {
  readonly req: TurnCaller;
  readonly endpoint: EndpointRecord;
  readonly deadlines: Deadlines;
  readonly turn: TurnContext;
  readonly account: { readonly projectId: string; readonly workspaceId: string | null; readonly keyId: string; readonly multiplier: number };
  readonly route: string;
}

export interface HarnessAnswer {
  /** The normalized completion (SPEC response shape). */
  readonly completion: Json;
  readonly usage: TurnUsage | null;
}

/** `label` null: the client's own turn (row keyed by the request id). Bytes are sent as they are. */
export async function exchangeOnce(services: ChatServices, c: HarnessCall, body: Json | Buffer, label: string | null): Promise<HarnessAnswer> {
  const deadline = new UpstreamDeadline(c.deadlines.requestMs, c.req, 'model', c.endpoint.tier, null);
  const started = deadline.started;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  const charge = (outcome: Outcome, u: TurnUsage | null, errorCode: string | null): void =>
    services.usage.record(
      usageRow({
        requestId: label === null ? c.req.requestId : `${c.req.requestId}.${label}`,
        account: c.account,
        endpointId: c.endpoint.id,
        route: c.route,
        lane: c.turn.lane,
        multiplier: c.account.multiplier,
        outcome,
        usage: u,
        started,
        createdAt: services.now(),
        call: deadline,
        // Buffered: no first byte to time.
        ttftMs: null,
        errorCode,
      }),
    );
  try {
    const call = {
      path: '/chat/completions',
      body: bytes,
      signal: deadline,
      accept: undefined,
      headersTimeoutMs: c.deadlines.requestMs + 1000,
      bodyTimeoutMs: c.deadlines.requestMs + 1000,
      requestId: c.req.requestId,
    };
    const res = await callUpstream(services.upstream, c.endpoint, call, false);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new GatewayError('internal_error', { message: 'The model server returned a response that is not JSON.' });
    }
    const failure = failedCompletion(json);
    if (failure !== null) throw failure;
    const { body: completion, usage } = normalizeCompletion(json, c.turn, services.now, () => Math.ceil(bytes.length / 4));
    charge('completed', usage, null);
    return { completion, usage };
  } catch (err) {
    const e = toGatewayError(err);
    charge(c.req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    throw e;
  } finally {
    deadline.done();
  }
}
