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
import { eventLoopSibling, type Db } from './db.js';
import { whereabouts, type Whereabouts } from './instances-liveness.js';
import { instancesPrograms } from './instances/instances-store.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';

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

export const newInstanceId = (): string => `inst_${randomBytes(8).toString('hex')}`;

/** How often an instance beats: every third of the lease (both backends). */
export const beatIntervalMs = (leaseMs: number): number => Math.max(100, Math.floor(leaseMs / 3));

/**
 * SQLite's registry: the statements are store/instances/instances-store.ts's, run synchronously on the
 * registry's own connection, each beat (renew, register again if need be, reap) one IMMEDIATE transaction,
 * so two instances sweeping at once judge and delete each dead row once.
 */
export function createInstanceRegistry(options: InstanceRegistryOptions): InstanceRegistry {
  const leaseMs = options.leaseMs ?? instanceLeaseMs();
  const now = options.now ?? Date.now;
  const db = eventLoopSibling(options.db, options.dbPath);
  const runner = createSqliteRunner(db);
  const id = newInstanceId();
  const programs = instancesPrograms('sqlite', { id, where: options.where ?? whereabouts(), startedAt: now(), leaseMs, now, alive: options.alive });

  const listeners = new Set<(sweep: InstanceSweep) => void>();
  const beatListeners = new Set<() => void>();
  let beats = 0;
  let closed = false;
  let live = 1;
  function heartbeat(): void {
    try {
      const beat = runner.writeSync(programs.beat(() => !closed));
      live = beat.live;
      if (beat.registeredAgain) {
        options.onWarn('instance registry: this instance had been judged dead (no heartbeat for longer than the lease) and registered again; work it held may have been recovered by another instance', { instance: id, lease_ms: leaseMs });
      }
      beats += 1;
      if (beat.reaped.length > 0 || beats % RECOVER_EVERY_BEATS === 0) notify(listeners, { reaped: beat.reaped });
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
  live = runner.writeSync(programs.start()).live;
  const timer = setInterval(heartbeat, beatIntervalMs(leaseMs));
  timer.unref();

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
    isRegistered: (other) => runner.firstSync(programs.registered(other)) !== undefined,
    liveInstances: () => live,
    close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      listeners.clear();
      beatListeners.clear();
      try {
        runner.writeSync(programs.deregister());
      } catch (err) {
        options.onError(`instance registry: deleting this instance's row failed: ${(err as Error).message}`);
      }
      if (db !== options.db) db.close();
    },
  };
}
