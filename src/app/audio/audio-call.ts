/**
 * One audio request against the endpoint's upstream: the call with the tier deadline and abort wiring,
 * the response streamed back to the client as returned (bytes untouched, uWS backpressure respected, a
 * bounded copy kept for accounting), and exactly one usage row once the upstream was called.
 */
import type { Readable } from 'node:stream';
import type { AudioUsage } from '../../core/audio/audio-usage.js';
import type { Deadlines } from '../../core/chat/deadlines.js';
import type { EndpointRecord } from '../../core/records.js';
import type { ByteSink, TurnCaller } from '../turn-io.js';
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
}

/**
 * Streams the upstream body to the client as it arrives. Keeps the first MiB (or, with `keepTail`, the
 * last 64 KiB) for accounting. `charge` gets how it ended just before the stream's end is handed to the
 * socket, so a SIGKILL between the two cannot leave a delivered answer unbilled; resolves with the same.
 */
export function pipeToClient(req: TurnCaller, reply: ByteSink, res: UpstreamResponse, keepTail: boolean, charge: (piped: Piped) => void): Promise<Piped> {
  const contentType = headerText(res.headers['content-type']) ?? 'application/octet-stream';
  reply.beginStream(res.statusCode, contentType);
  let kept = '';
  let complete = true;
  return new Promise((resolve, reject) => {
    const body = res.body;
    const end = (piped: Piped): void => {
      try {
        charge(piped);
        resolve(piped);
      } catch (err) {
        reject(err);
      } finally {
        reply.endStream();
      }
    };
    req.onAbort(() => body.destroy());
    // At a graceful stop's deadline the audio stream ends where it is (its framing is the model's, not
    // ours to add an error event to), billed for what was delivered.
    reply.onDrainDeadline(() => {
      body.destroy();
      end({ outcome: 'drained', kept, complete: false });
    });
    body.on('data', (chunk: Buffer) => {
      if (!reply.open) return;
      if (keepTail) kept = (kept + chunk.toString('utf8')).slice(-64 * 1024);
      else if (kept.length < KEEP_BYTES) kept += chunk.toString('utf8');
      else complete = false;
      if (!reply.write(chunk)) {
        body.pause();
        reply.onWritable(() => body.resume());
      }
    });
    body.on('end', () => end({ outcome: 'completed', kept, complete }));
    body.on('error', () => end({ outcome: req.aborted ? 'aborted' : 'error', kept, complete: false }));
  });
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
