/**
 * Live readers of invocations (the SSE events route): status changes and output, published by the
 * service after each change is committed. In memory, per process: changes committed by another replica
 * (PostgreSQL) or instance reach these readers through the service's `reconcile`.
 */
import type { InvocationStatus } from '../../core/exec/invocation-machine.js';

export type WatchEvent =
  | { readonly kind: 'status'; readonly status: InvocationStatus }
  | { readonly kind: 'output'; readonly data: string };

export type WatchListener = (event: WatchEvent) => void;

export class InvocationWatch {
  readonly #listeners = new Map<string, Set<WatchListener>>();

  subscribe(invocationId: string, listener: WatchListener): () => void {
    let set = this.#listeners.get(invocationId);
    if (!set) this.#listeners.set(invocationId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#listeners.get(invocationId) === set) this.#listeners.delete(invocationId);
    };
  }

  publish(invocationId: string, event: WatchEvent): void {
    const set = this.#listeners.get(invocationId);
    if (!set) return;
    // A copy: a listener that ends its stream unsubscribes while we iterate.
    for (const listener of [...set]) listener(event);
  }

  /** The invocations someone is reading now. */
  ids(): IterableIterator<string> {
    return this.#listeners.keys();
  }

  get watched(): number {
    return this.#listeners.size;
  }
}
