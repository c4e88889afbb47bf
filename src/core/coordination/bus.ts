/**
 * The message bus port (issue 12): what one process (or worker thread) tells the others so that their
 * in-memory state stays right. Delivery is at-most-once and unordered across publishers: a subscriber
 * must treat every message as a hint or an idempotent fact (a reload is always safe; a budget charge
 * carries its own id). A bus that can lose messages says when it may have: after its receiving side comes
 * back from a disconnect, its `onResubscribed` listeners rebuild from the store what the lost messages
 * would have kept right.
 *
 * Implementations: none (one process: `localBus`), BroadcastChannel between the worker threads of one
 * process, Redis pub/sub between replicas. A publisher does not receive its own messages.
 */
export type BusMessage =
  /** Keys, projects, workspaces, endpoints or router settings changed in the store: reload the caches. */
  | { readonly kind: 'invalidate'; readonly what: 'catalog' | 'router' | 'all' }
  /** A turn's spend, charged by the replica that served it, applied by every other one (no alert there). */
  | { readonly kind: 'budget_charge'; readonly projectId: string; readonly endpointId: string; readonly workspaceId: string | null; readonly tokens: number; readonly costNanos: number; readonly at: number }
  /** The router's conversation affinity (SPEC behaviour 5), set where the turn was routed. */
  | { readonly kind: 'affinity'; readonly key: string; readonly endpointId: string; readonly at: number };

export interface Bus {
  publish(message: BusMessage): void;
  /** Returns the unsubscribe function. */
  subscribe(listener: (message: BusMessage) => void): () => void;
  /**
   * Runs the listener each time this process receives messages again after a disconnect (messages
   * published meanwhile are lost), once it is subscribed again. Never on a bus that cannot lose them.
   * Returns the unsubscribe function.
   */
  onResubscribed(listener: () => void): () => void;
  close(): Promise<void>;
}

/** One process, no peers: nothing to tell anyone. */
export const localBus: Bus = {
  publish: () => undefined,
  subscribe: () => () => undefined,
  onResubscribed: () => () => undefined,
  close: async () => undefined,
};
