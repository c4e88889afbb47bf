/**
 * The instance registry (issue 12): every `startGateway` on a store, a process or a worker thread of
 * `serve --workers N`, is an instance with a row in `gateway_instances` (migration 016). It heartbeats the
 * row every third of the lease, on a timer and on a connection of its own (synchronous=NORMAL: nothing the
 * request path waits on, no fsync per beat), and at each beat deletes the rows of instances that are dead
 * (instances-liveness.ts). A graceful close deletes its own row.
 *
 * Recovery is keyed on this table: work records the instance that took it, and an instance recovers only
 * work whose owner is no longer registered (deleted here, or never recorded: rows from before migration
 * 016). Deleting the dead row first and then recovering "owner not registered" means that an instance that
 * registered a moment ago is never mistaken for a dead one, whatever snapshot another instance judged from.
 *
 * Times are the wall clock (Date.now), never the gateway's injectable test clock: a test that moves the
 * clock by an hour to see webhook retries must not make every sibling look dead.
 *
 * A live instance whose event loop stalls for longer than the lease is judged dead and its work recovered
 * by the others (a dispatched invocation fails gateway_restarted, a webhook delivery is sent again); at its
 * next beat it finds its row gone, registers again and says so.
 */
import { randomBytes } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { openDatabase, writeTransaction, type Db } from './db.js';
import { isDead, whereabouts, type Whereabouts } from './instances-liveness.js';

/**
 * How long an instance may go without a heartbeat before the others treat it as dead. It beats every
 * third of the lease (5 s), so 15 s is two missed beats plus room for a stalled disk or a long GC pause. Tests shorten it through
 * the SWITCHBOARD_INSTANCE_LEASE_MS environment variable (at least 300 ms); operators have no reason to.
 */
export const INSTANCE_LEASE_MS = 15_000;
const MIN_LEASE_MS = 300;
/** Recovery also runs every this many beats when nobody died: work a recovering instance died in the middle of. */
const RECOVER_EVERY_BEATS = 20;

export function instanceLeaseMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SWITCHBOARD_INSTANCE_LEASE_MS;
  const ms = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(ms) && ms >= MIN_LEASE_MS ? ms : INSTANCE_LEASE_MS;
}

export interface InstanceSweep {
  /** Instances found dead and deleted at this beat (by this instance). */
  readonly reaped: readonly string[];
}

export interface InstanceRegistry {
  /** This instance's id (`inst_<hex>`, new at every start). */
  readonly id: string;
  readonly leaseMs: number;
  /**
   * Called after a beat that deleted dead instances (and every RECOVER_EVERY_BEATS beats): the cue to
   * recover work whose owner is not registered. Returns the unsubscribe function.
   */
  onSweep(listener: (sweep: InstanceSweep) => void): () => void;
  /** Called after every beat (leases held by this instance are renewed here). Returns the unsubscribe function. */
  onHeartbeat(listener: () => void): () => void;
  /** Whether `id` is a registered instance: live, or dead and not deleted yet. */
  isRegistered(id: string): boolean;
  /** How many instances were live at the last beat, this one included (the last count if that beat failed). */
  liveInstances(): number;
  /** Stops the beats and deletes this instance's row: its unfinished work is anybody's to recover. */
  close(): void;
}

export interface InstanceRegistryOptions {
  /** The store's file; ':memory:' runs on `db` itself (one instance per in-memory store). */
  readonly dbPath: string;
  readonly db: Db;
  readonly leaseMs?: number;
  readonly onError: (message: string) => void;
  readonly onWarn: (message: string, fields: Record<string, unknown>) => void;
  /** Injected by tests. */
  readonly now?: () => number;
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

export const newInstanceId = (): string => `inst_${randomBytes(8).toString('hex')}`;

export function createInstanceRegistry(options: InstanceRegistryOptions): InstanceRegistry {
  const leaseMs = options.leaseMs ?? instanceLeaseMs();
  const now = options.now ?? Date.now;
  const where = options.where ?? whereabouts();
  const db = options.dbPath === ':memory:' ? options.db : openDatabase(options.dbPath, 'NORMAL');
  const id = newInstanceId();
  const startedAt = now();

  const insert = db.prepare(
    'INSERT INTO gateway_instances (id, pid, thread_id, host, pid_scope, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const beat = db.prepare('UPDATE gateway_instances SET heartbeat_at = ? WHERE id = ?');
  const others = db.prepare<[string], InstanceRow>('SELECT id, pid, host, pid_scope, started_at, heartbeat_at FROM gateway_instances WHERE id <> ?');
  const remove = db.prepare('DELETE FROM gateway_instances WHERE id = ?');
  const registered = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM gateway_instances WHERE id = ?');

  const register = (): void => void insert.run(id, where.pid, threadId, where.host, where.pidScope, startedAt, now());
  let live = 1;
  // Judged and deleted under the write lock: two instances sweeping at once delete each dead row once.
  const reap = writeTransaction(db, (at: number): string[] => {
    const rows = others.all(id);
    const dead = rows.filter((r) => isDead({ id: r.id, pid: r.pid, host: r.host, pidScope: r.pid_scope, startedAt: r.started_at, heartbeatAt: r.heartbeat_at }, where, at, leaseMs, options.alive));
    for (const r of dead) remove.run(r.id);
    live = 1 + rows.length - dead.length;
    return dead.map((r) => r.id);
  });

  const listeners = new Set<(sweep: InstanceSweep) => void>();
  const beatListeners = new Set<() => void>();
  let beats = 0;
  function heartbeat(): void {
    try {
      if (beat.run(now(), id).changes === 0) {
        register();
        options.onWarn('instance registry: this instance had been judged dead (no heartbeat for longer than the lease) and registered again; work it held may have been recovered by another instance', { instance: id, lease_ms: leaseMs });
      }
      const reaped = reap(now());
      beats += 1;
      if (reaped.length > 0 || beats % RECOVER_EVERY_BEATS === 0) notify(listeners, { reaped });
    } catch (err) {
      options.onError(`instance registry: heartbeat failed: ${(err as Error).message}`);
    }
    notify(beatListeners, undefined);
  }
  function notify<T>(to: Set<(arg: T) => void>, arg: T): void {
    for (const listener of to) {
      try {
        listener(arg);
      } catch (err) {
        options.onError(`instance registry: a heartbeat listener failed: ${(err as Error).message}`);
      }
    }
  }

  // Registered and swept before the caller's start-up recovery runs, which relies on both.
  register();
  reap(now());
  const timer = setInterval(heartbeat, Math.max(100, Math.floor(leaseMs / 3)));
  timer.unref();
  let closed = false;

  return {
    id,
    leaseMs,
    onSweep(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onHeartbeat(listener) {
      beatListeners.add(listener);
      return () => beatListeners.delete(listener);
    },
    isRegistered: (other) => registered.get(other) !== undefined,
    liveInstances: () => live,
    close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      listeners.clear();
      beatListeners.clear();
      try {
        remove.run(id);
      } catch (err) {
        options.onError(`instance registry: deleting this instance's row failed: ${(err as Error).message}`);
      }
      if (db !== options.db) db.close();
    },
  };
}
