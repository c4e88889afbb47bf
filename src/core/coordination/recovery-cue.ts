/**
 * What a subsystem that recovers work left by a gone gateway instance (background responses, batch lines,
 * dispatched invocations) needs: the cue that a sibling may have died. Both instance registries give it:
 * SQLite's (store/instances-registry.ts) after a beat that deleted dead instances, PostgreSQL's
 * (store/postgres/instances-registry.ts) after every beat. Returns the unsubscribe function.
 */
export interface RecoveryCue {
  onSweep(listener: () => void): () => void;
}
