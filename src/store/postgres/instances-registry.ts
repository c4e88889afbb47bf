/**
 * The registry of the replicas that claim webhook deliveries in PostgreSQL (issue 12): the same lease
 * rules as the SQLite registry (store/instances-registry.ts, whose comment says why each holds), on the
 * shared database, so a replica on another host sees a dead sibling's row go and takes its claims back.
 * A beat is a round trip on the pool, off the request path; a beat still running when the next is due is
 * not doubled. Liveness is judged by instances-liveness.ts: the lease everywhere, the process table on the
 * same host.
 */
import { beatIntervalMs, newInstanceId } from '../instances-registry.js';
import { whereabouts, type Whereabouts } from '../instances-liveness.js';
import { instancesPrograms } from '../instances/instances-store.js';
import { createPostgresRunner } from '../sql/postgres-runner.js';
import type { PgStore } from './pg-store.js';

export interface PgInstanceRegistry {
  readonly id: string;
  readonly leaseMs: number;
  /** Called after every beat (this instance's claims are renewed there). Returns the unsubscribe function. */
  onHeartbeat(listener: () => void): () => void;
  /** The recovery cue (core/coordination/recovery-cue.ts): every beat, whose reap deletes the instances gone. */
  onSweep(listener: () => void): () => void;
  /** How many replicas were live at the last beat, this one included (the last count while PostgreSQL is down). */
  liveInstances(): number;
  /** Stops the beats and deletes this instance's row: its claims are anybody's to take. */
  close(): Promise<void>;
}

export interface PgInstanceRegistryOptions {
  readonly leaseMs: number;
  readonly onError: (message: string) => void;
  readonly onWarn: (message: string, fields: Record<string, unknown>) => void;
  readonly where?: Whereabouts;
  readonly alive?: (pid: number) => boolean;
}

/**
 * PostgreSQL's registry: the statements are store/instances/instances-store.ts's, awaited on the pool
 * statement by statement (no transaction held across a beat: the reap's guarded delete needs none).
 */
export async function createPgInstanceRegistry(store: PgStore, options: PgInstanceRegistryOptions): Promise<PgInstanceRegistry> {
  const runner = createPostgresRunner(store);
  const { leaseMs } = options;
  const id = newInstanceId();
  const programs = instancesPrograms('postgres', { id, where: options.where ?? whereabouts(), startedAt: Date.now(), leaseMs, now: Date.now, alive: options.alive });

  let live = 1;
  const listeners = new Set<() => void>();
  let beating = false;
  let closed = false;
  let lastBeat: Promise<void> = Promise.resolve();
  const beat = async (): Promise<void> => {
    try {
      const outcome = await runner.read(programs.beat(() => !closed));
      live = outcome.live;
      if (outcome.registeredAgain) {
        options.onWarn('instance registry (PostgreSQL): this instance had been judged dead (no heartbeat for longer than the lease) and registered again; deliveries it held may have been sent by another instance', { instance: id, lease_ms: leaseMs });
      }
    } catch (err) {
      options.onError(`instance registry (PostgreSQL): heartbeat failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        options.onError(`instance registry (PostgreSQL): a heartbeat listener failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };

  // Registered and swept before the dispatcher's start-up release, which relies on both.
  live = (await runner.read(programs.start())).live;
  const timer = setInterval(() => {
    if (beating || closed) return;
    beating = true;
    lastBeat = beat().finally(() => (beating = false));
  }, beatIntervalMs(leaseMs));
  timer.unref();

  const subscribe = (listener: () => void): (() => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };

  return {
    id,
    leaseMs,
    onHeartbeat: subscribe,
    onSweep: subscribe,
    liveInstances: () => live,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      listeners.clear();
      await lastBeat;
      try {
        await runner.read(programs.deregister());
      } catch (err) {
        options.onError(`instance registry (PostgreSQL): deleting this instance's row failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  };
}
