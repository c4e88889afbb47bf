/**
 * The transport side of background responses (`background: true`; the job control is the use case in
 * app/responses/background-responses.ts): a client following a streamed run's events as SSE, from the
 * creating request (`stream: true`) or from `GET .../{id}?stream=true` after `starting_after`.
 */
import type { IncomingRequest } from '../http/request.js';
import type { Reply } from '../http/reply.js';
import type { BackgroundRun } from '../app/responses/background-run.js';

/**
 * Writes a run's frames after `startingAfter` to a client as SSE, then the new ones as they come, under
 * uWS backpressure, until the run ends or the client leaves (the run goes on either way).
 */
export function followRun(run: BackgroundRun, req: IncomingRequest, reply: Reply, startingAfter: number): Promise<void> {
  reply.setHeader('Cache-Control', 'no-cache');
  reply.beginStream(200, 'text/event-stream');
  return new Promise<void>((resolve) => {
    let next = Math.max(0, startingAfter + 1);
    let waiting = false;
    let done = false;
    const stop = (): void => {
      if (done) return;
      done = true;
      unsubscribe();
      resolve();
    };
    const pump = (): void => {
      waiting = false;
      if (done) return;
      while (next < run.frames.length) {
        if (!reply.open) return stop();
        if (!reply.write(run.frames[next++] as string)) {
          waiting = true;
          reply.onWritable(pump);
          return;
        }
      }
      if (run.ended) {
        reply.endStream();
        stop();
      }
    };
    const unsubscribe = run.subscribe(() => {
      if (!waiting) pump();
    });
    req.onAbort(stop);
    // A graceful stop ends the follower's stream; the turn itself is failed "interrupted" at the next start.
    reply.onDrainDeadline(() => {
      reply.endStream();
      stop();
    });
    pump();
  });
}
