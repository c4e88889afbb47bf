/**
 * `GET /{project}/v1/exec/invocations/{id}/events` (docs/exec.md): SSE with the current status (and the
 * output so far) first, then `{type: "status", status}` on every change and `{type: "output", data}` as
 * output arrives, and `[DONE]` once the invocation is over. A cancel ends the stream with SPEC's
 * mid-stream cancel payload, `{"error": {"code": "cancelled", "message": ...}}` (no `type` field, SPEC
 * "Execution surface errors"), then `[DONE]`.
 *
 * Backpressure: while uWS reports the socket full, frames wait in `pending` and go out together once it
 * drains. What can wait is bounded: an invocation's output is capped (exec.output_cap_bytes).
 */
import { isTerminal, type Invocation, type InvocationStatus } from '../core/exec/invocation-machine.js';
import { GatewayError } from '../errors.js';
import type { RouteContext } from '../http/server.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';
import type { WatchEvent } from '../exec/invocations/invocation-watch.js';

const DONE = 'data: [DONE]\n\n';
const frame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;

function closingFrames(inv: { status: InvocationStatus }): string {
  if (inv.status !== 'cancelled') return DONE;
  return frame({ error: { code: 'cancelled', message: 'The invocation was cancelled.' } }) + DONE;
}

export function followInvocation(ctx: RouteContext, exec: InvocationService, projectId: string, id: string): Promise<void> {
  const { reply, req } = ctx;
  return new Promise<void>((resolve, reject) => {
    let pending = '';
    // Frames wait until the stream has begun (the first read of the record is asynchronous).
    let waiting = true;
    let ended = false;
    let stop: () => void = () => undefined;

    const flush = (): void => {
      if (!pending || waiting || !reply.open) return;
      const out = pending;
      pending = '';
      if (!reply.write(out)) {
        // uWS kept the bytes; later frames wait until it has sent them.
        waiting = true;
        reply.onWritable(() => {
          waiting = false;
          flush();
        });
      }
    };
    const send = (text: string): void => {
      pending += text;
      flush();
    };
    const finish = (last: string): void => {
      if (ended) return;
      ended = true;
      stop();
      // The last frames go to uWS whatever its buffer holds: it sends them before the end.
      if (reply.open) {
        const out = pending + last;
        pending = '';
        reply.endStream(out);
      }
      resolve();
    };

    const apply = (event: WatchEvent): void => {
      if (event.kind === 'output') return send(frame({ type: 'output', data: event.data }));
      send(frame({ type: 'status', status: event.status }));
      if (isTerminal(event.status)) finish(closingFrames(event));
    };
    // Events published while the record is read wait for the stream's first frames.
    let early: WatchEvent[] | null = [];
    const onEvent = (event: WatchEvent): void => {
      if (early) early.push(event);
      else apply(event);
    };

    req.onAbort(() => {
      ended = true;
      stop();
      resolve();
    });
    exec.follow(projectId, id, onEvent).then((followed) => {
      stop = followed.stop;
      if (ended) return stop();
      reply.onDrainDeadline(() => {
        finish(frame(new GatewayError('service_draining', { message: 'The server is shutting down; follow the invocation again on another server.' }).toEnvelope()) + DONE);
      });
      reply.setHeader('Cache-Control', 'no-cache');
      reply.beginStream(200, 'text/event-stream');
      waiting = false;
      const inv: Invocation = followed.invocation;
      send(frame({ type: 'status', status: inv.status }));
      if (inv.output) send(frame({ type: 'output', data: inv.output }));
      if (isTerminal(inv.status)) return finish(closingFrames(inv));
      const held = early ?? [];
      early = null;
      for (const event of held) if (!ended) apply(event);
    }, reject);
  });
}
