/**
 * Waits for an invocation's terminal state, cancelling it if the caller leaves first (the MCP request's
 * abort). As the chat tool bridge waits for its runs (exec/invocations/chat-tool-runner.ts).
 */
import { isTerminal, type Invocation } from '../core/exec/invocation-machine.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';

export function settled(service: InvocationService, first: Invocation, signal: AbortSignal): Promise<Invocation> {
  return new Promise((resolve) => {
    let done = false;
    let stop: () => void = () => undefined;
    const finish = (): void => {
      if (done) return;
      const now = service.get(first.projectId, first.id);
      if (!isTerminal(now.status)) return;
      done = true;
      stop();
      signal.removeEventListener('abort', abandon);
      resolve(now);
    };
    const abandon = (): void => {
      if (done) return;
      try {
        service.cancel(first.projectId, first.id);
      } catch {
        // Already over: finish() reads how it ended.
      }
      finish();
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
