/**
 * Conversation affinity (SPEC behaviour 5): which endpoint a conversation was last routed to. In memory on
 * one node, bounded (least recently used entries go first) and expiring; time is passed in, so tests move
 * it. Behind this interface it can move to a shared store (ARCHITECTURE "State") without touching the core.
 */

export interface AffinityMap {
  get(key: string, now: number): string | null;
  set(key: string, endpointId: string, now: number): void;
  readonly size: number;
}

interface Entry {
  readonly endpointId: string;
  readonly expiresAt: number;
}

export function createAffinityMap(options: { maxEntries: number; ttlMs: number }): AffinityMap {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<string, Entry>();
  return {
    get(key, now) {
      const entry = entries.get(key);
      if (!entry) return null;
      entries.delete(key);
      if (entry.expiresAt <= now) return null;
      entries.set(key, entry);
      return entry.endpointId;
    },
    set(key, endpointId, now) {
      entries.delete(key);
      entries.set(key, { endpointId, expiresAt: now + options.ttlMs });
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest === undefined) break;
        entries.delete(oldest);
      }
    },
    get size() {
      return entries.size;
    },
  };
}
