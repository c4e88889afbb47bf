/**
 * Waits for an invocation's terminal state, cancelling it if the caller leaves first (the MCP request's
 * abort, the chat completion's). Used by the MCP tools and the chat tool bridge
 * (exec/invocations/chat-tool-runner.ts).
 */
import { isTerminal, type Invocation } from '../../core/exec/invocation-machine.js';
import type { InvocationService } from './invocation-service.js';

export function settled(service: InvocationService, first: Invocation, signal: AbortSignal): Promise<Invocation> {
  return new Promise((resolve, reject) => {
    let done = false;
    let stop: () => void = () => undefined;
    const end = (): void => {
      done = true;
      stop();
      signal.removeEventListener('abort', abandon);
    };
    // Each status event reads the stored record: the event says something moved, the record says where.
    const finish = (): void => {
      if (done) return;
      service.get(first.projectId, first.id).then(
        (now) => {
          if (done || !isTerminal(now.status)) return;
          end();
          resolve(now);
        },
        (err: unknown) => {
          if (done) return;
          end();
          reject(err);
        },
      );
    };
    const abandon = (): void => {
      if (done) return;
      // Already over: finish() reads how it ended.
      service.cancel(first.projectId, first.id).catch(() => undefined).finally(finish);
    };
    stop = service.watch.subscribe(first.id, (event) => {
      if (event.kind === 'status') finish();
    });
    if (signal.aborted) abandon();
    else signal.addEventListener('abort', abandon, { once: true });
    // It may have ended between its creation and the subscription.
    finish();
  });
}
