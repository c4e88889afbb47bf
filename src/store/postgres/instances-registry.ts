/**
 * The registry of the replicas that claim webhook deliveries in PostgreSQL (issue 12): the same lease
 * rules as the SQLite registry (store/instances-registry.ts, whose comment says why each holds), on the
 * shared database, so a replica on another host sees a dead sibling's row go and takes its claims back.
 * A beat is a round trip on the pool, off the request path; a beat still running when the next is due is
 * not doubled. Liveness is judged by instances-liveness.ts: the lease everywhere, the process table on the
 * same host.
 */
import { newInstanceId } from '../instances-registry.js';
import { isDead, whereabouts, type Whereabouts } from '../instances-liveness.js';
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

interface InstanceRow {
  id: string;
  pid: number;
  host: string;
  pid_scope: string;
  started_at: number;
  heartbeat_at: number;
}

export async function createPgInstanceRegistry(store: PgStore, options: PgInstanceRegistryOptions): Promise<PgInstanceRegistry> {
  const { pool } = store;
  const { leaseMs } = options;
  const where = options.where ?? whereabouts();
  const id = newInstanceId();
  const startedAt = Date.now();

  const register = async (): Promise<void> => {
    await pool.query('INSERT INTO gateway_instances (id, pid, host, pid_scope, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      id,
      where.pid,
      where.host,
      where.pidScope,
      startedAt,
      Date.now(),
    ]);
  };
  let live = 1;
  // A row is deleted only if it has not beaten since it was judged: a late beat saves it.
  const reap = async (): Promise<void> => {
    const now = Date.now();
    const { rows } = await pool.query<InstanceRow>('SELECT id, pid, host, pid_scope, started_at, heartbeat_at FROM gateway_instances WHERE id <> $1', [id]);
    const dead = rows.filter((r) =>
      isDead({ id: r.id, pid: r.pid, host: r.host, pidScope: r.pid_scope, startedAt: r.started_at, heartbeatAt: r.heartbeat_at }, where, now, leaseMs, options.alive),
    );
    live = 1 + rows.length - dead.length;
    if (dead.length === 0) return;
    await pool.query(
      'DELETE FROM gateway_instances g USING unnest($1::text[], $2::bigint[]) AS d(id, heartbeat_at) WHERE g.id = d.id AND g.heartbeat_at = d.heartbeat_at',
      [dead.map((r) => r.id), dead.map((r) => r.heartbeat_at)],
    );
  };

  const listeners = new Set<() => void>();
  let beating = false;
  let closed = false;
  let lastBeat: Promise<void> = Promise.resolve();
  const beat = async (): Promise<void> => {
    try {
      const { rowCount } = await pool.query('UPDATE gateway_instances SET heartbeat_at = $1 WHERE id = $2', [Date.now(), id]);
      if (rowCount === 0 && !closed) {
        await register();
        options.onWarn('instance registry (PostgreSQL): this instance had been judged dead (no heartbeat for longer than the lease) and registered again; deliveries it held may have been sent by another instance', { instance: id, lease_ms: leaseMs });
      }
      await reap();
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
  await register();
  await reap();
  const timer = setInterval(() => {
    if (beating || closed) return;
    beating = true;
    lastBeat = beat().finally(() => (beating = false));
  }, Math.max(100, Math.floor(leaseMs / 3)));
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
        await pool.query('DELETE FROM gateway_instances WHERE id = $1', [id]);
      } catch (err) {
        options.onError(`instance registry (PostgreSQL): deleting this instance's row failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  };
}
