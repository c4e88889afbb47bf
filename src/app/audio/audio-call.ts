/**
 * One audio request against the endpoint's upstream: the call with the tier deadline and abort wiring,
 * the response streamed back to the client as returned (bytes untouched, uWS backpressure respected, a
 * bounded copy kept for accounting), and exactly one usage row once the upstream was called.
 */
import type { Readable } from 'node:stream';
import type { AudioUsage } from '../../core/audio/audio-usage.js';
import type { Deadlines } from '../../core/chat/deadlines.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { DONE_FRAME, errorFrame, timeoutEvent } from '../sse-frames.js';
import type { ByteSink, TurnCaller } from '../turn-io.js';
import { WholeSseEvents } from './whole-sse-events.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import type { UpstreamAbort, UpstreamResponse } from '../../upstream/upstream-client.js';
import { usageRow } from '../usage-row.js';
import type { ChatServices, Outcome } from '../chat/chat-dispatch.js';

export interface AudioCall {
  /** The answer below 400; rejects with the client's error (an error status mapped, the deadline, ...). */
  readonly response: Promise<UpstreamResponse>;
  /** Its deadline and abort: `abort()`, `done()`, `started`, and `failure(err)` for a failed body read. */
  readonly deadline: UpstreamDeadline;
}

export interface AudioAccount {
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly keyId: string;
}

export function startAudioCall(
  services: ChatServices,
  req: TurnCaller,
  endpoint: EndpointRecord,
  call: { path: string; body: Buffer | Readable; contentType?: string; accept?: string },
  deadlines: Deadlines,
): AudioCall {
  const deadline = new UpstreamDeadline(deadlines.requestMs, req, 'model server', endpoint.tier, null);
  const response = callUpstream(
    services.upstream,
    endpoint,
    {
      path: call.path,
      body: call.body,
      contentType: call.contentType,
      accept: call.accept,
      signal: deadline,
      headersTimeoutMs: deadlines.requestMs + 1000,
      bodyTimeoutMs: deadlines.idleMs + 1000,
      requestId: req.requestId,
    },
    true,
  );
  // An upload that fails first never awaits the response.
  response.catch(() => undefined);
  return { response, deadline };
}

const KEEP_BYTES = 1024 * 1024;

export interface Piped {
  readonly outcome: Outcome;
  readonly kept: string;
  readonly complete: boolean;
  /** The error an SSE answer was ended with (its row's error code), or null. */
  readonly error: GatewayError | null;
}

export interface PipeOptions {
  /** Keep the last 64 KiB for accounting (an SSE answer's usage comes last) rather than the first MiB. */
  readonly keepTail: boolean;
  /** The tier's idle deadline: named in the timeout event of an SSE answer the model left idle. */
  readonly idleMs: number;
}

/**
 * Streams the upstream body to the client as it arrives. Keeps the first MiB (or, with `keepTail`, the
 * last 64 KiB) for accounting. `charge` gets how it ended just before the stream's end is handed to the
 * socket, so a SIGKILL between the two cannot leave a delivered answer unbilled; resolves with the same.
 * A byte stream (audio) has the model's framing, not ours, and ends where it is cut; an SSE answer is
 * ours to end as SPEC "Streaming events" says (whole-sse-events.ts).
 */
export function pipeToClient(req: TurnCaller, reply: ByteSink, res: UpstreamResponse, opts: PipeOptions, charge: (piped: Piped) => void): Promise<Piped> {
  const contentType = headerText(res.headers['content-type']) ?? 'application/octet-stream';
  const events = contentType.toLowerCase().startsWith('text/event-stream') ? new WholeSseEvents() : null;
  reply.beginStream(res.statusCode, contentType);
  let kept = '';
  let complete = true;
  let settled = false;
  return new Promise((resolve, reject) => {
    const body = res.body;
    const end = (outcome: Outcome, error: GatewayError | null = null, last?: string): void => {
      // Destroying the body (drain deadline) emits its error too: one row, one end.
      if (settled) return;
      settled = true;
      const piped: Piped = { outcome, kept, complete: complete && outcome === 'completed', error };
      try {
        charge(piped);
        resolve(piped);
      } catch (err) {
        reject(err);
      } finally {
        reply.endStream(last);
      }
    };
    req.onAbort(() => body.destroy());
    // At a graceful stop's deadline the stream ends where it is, billed for what was delivered: an SSE
    // answer with SPEC's mid-stream error (service_draining), as chat's, a byte stream as it stands.
    reply.onDrainDeadline(() => {
      body.destroy();
      const e = new GatewayError('service_draining', { message: 'The server is shutting down; the stream was ended before the model finished. Retry the request.' });
      end('drained', events ? e : null, events?.closing(errorFrame(e) + DONE_FRAME));
    });
    body.on('data', (chunk: Buffer) => {
      if (!reply.open) return;
      if (opts.keepTail) kept = (kept + chunk.toString('utf8')).slice(-64 * 1024);
      else if (kept.length < KEEP_BYTES) kept += chunk.toString('utf8');
      else complete = false;
      const out = events ? events.push(chunk) : chunk;
      if (out.length > 0 && !reply.write(out)) {
        body.pause();
        reply.onWritable(() => body.resume());
      }
    });
    // SSE is UTF-8 (WHATWG HTML "Server-sent events"), and these are the stream's last bytes: no split character.
    body.on('end', () => end('completed', null, events?.rest().toString('utf8')));
    body.on('error', (err: unknown) => {
      if (req.aborted) return end('aborted');
      if (!events) return end('error');
      if (isBodyTimeout(err)) {
        const message = `The model sent nothing for ${opts.idleMs / 1000} s.`;
        return end('timeout', new GatewayError('timeout', { message }), events.closing(timeoutEvent(message)));
      }
      const e = new GatewayError('internal_error', { message: 'The connection to the model server failed mid-stream.' });
      end('error', e, events.closing(errorFrame(e) + DONE_FRAME));
    });
  });
}

/** undici's idle timer on a response body (bodyTimeout). */
function isBodyTimeout(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'UND_ERR_BODY_TIMEOUT';
}

export function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * `call`: the upstream call's signal (its server and retries go on the row); null for a realtime row,
 * whose session owns no single call. `errorCode`: the client's error, where the caller has it.
 */
export function recordAudioUsage(
  services: ChatServices,
  row: { requestId: string; endpoint: EndpointRecord; account: AudioAccount; route: string; outcome: Outcome; usage: AudioUsage | null; started: number; call: UpstreamAbort | null; errorCode?: string | null },
): void {
  services.usage.record(
    usageRow({
      requestId: row.requestId,
      account: row.account,
      endpointId: row.endpoint.id,
      route: row.route,
      lane: 'default',
      multiplier: 1,
      outcome: row.outcome,
      usage: row.usage,
      started: row.started,
      createdAt: services.now(),
      call: row.call,
      ttftMs: null,
      errorCode: row.errorCode ?? null,
    }),
  );
}
