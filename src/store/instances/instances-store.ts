/**
 * The instance registry's statements (issue 12), written once for SQLite and PostgreSQL (issue 33): an
 * instance registers its row, beats it, reaps the rows of dead instances and deletes its own row when it
 * closes, each a program (sql/sql-program.ts) compiled once per registry. Why each rule holds is said in
 * store/instances-registry.ts; who is dead is instances-liveness.ts's to judge. The registries drive these
 * programs their backend's way: SQLite's synchronously, on a connection of its own, each beat one IMMEDIATE
 * transaction; PostgreSQL's awaited on the pool, statement by statement, a beat never doubled.
 *
 * A dead row is deleted only if it has not beaten since it was judged (`heartbeat_at` as read): a late
 * beat saves it, and two instances reaping at once delete it once (only the one whose delete changed the
 * row reports it). Under SQLite's write lock the guard never fails; on PostgreSQL it is what makes the
 * judgement safe without a transaction.
 */
import { threadId } from 'node:worker_threads';
import type { Insertable } from 'kysely';
import { isDead, type Whereabouts } from '../instances-liveness.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, prepared, preparedRow, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { InstancesTables } from './instances-tables.js';

/** The instance a registry stands for. */
export interface RegisteredInstance {
  readonly id: string;
  readonly where: Whereabouts;
  readonly startedAt: number;
  readonly leaseMs: number;
  /** The wall clock, never the gateway's test clock (store/instances-registry.ts). */
  readonly now: () => number;
  /** The process probe (instances-liveness.ts processAlive unless a test injects one). */
  readonly alive?: (pid: number) => boolean;
}

export interface Sweep {
  /** The instances found dead and deleted by this reap. */
  readonly reaped: readonly string[];
  /** How many instances are live, this one included. */
  readonly live: number;
}

export interface Beat extends Sweep {
  /** This instance's row was gone (it had been judged dead) and was inserted again. */
  readonly registeredAgain: boolean;
}

type InstanceRow = Insertable<InstancesTables['gateway_instances']>;

export function instancesPrograms(dialect: SqlDialect, self: RegisteredInstance) {
  const { db } = sqlFor<InstancesTables>(dialect);
  const table = 'gateway_instances' as const;
  const insert = preparedRow((row: InstanceRow) => db.insertInto(table).values(row));
  const renew = prepared((id: string, at: number) => db.updateTable(table).set({ heartbeat_at: at }).where('id', '=', id));
  const others = prepared((id: string) => db.selectFrom(table).select(['id', 'pid', 'host', 'pid_scope', 'started_at', 'heartbeat_at']).where('id', '<>', id));
  const removeIfUnchanged = prepared((id: string, heartbeatAt: number) => db.deleteFrom(table).where('id', '=', id).where('heartbeat_at', '=', heartbeatAt));
  const remove = prepared((id: string) => db.deleteFrom(table).where('id', '=', id));
  const registered = prepared((id: string) => db.selectFrom(table).select('id').where('id', '=', id));

  const { id, where, leaseMs, now } = self;
  const common = { id, pid: where.pid, host: where.host, pid_scope: where.pidScope, started_at: self.startedAt };
  // Only SQLite's table has thread_id, this worker thread's (instances-tables.ts onlyIn): PostgreSQL's row goes without it.
  const rowAt = (at: number): InstanceRow =>
    (dialect === 'sqlite' ? { ...common, thread_id: threadId, heartbeat_at: at } : { ...common, heartbeat_at: at }) as InstanceRow;

  function* register(): SqlProgram<void> {
    yield* run(insert(rowAt(now())));
  }

  function* reap(): SqlProgram<Sweep> {
    const at = now();
    const seen = yield* rows(others(id));
    const dead = seen.filter((r) =>
      isDead({ id: r.id, pid: r.pid, host: r.host, pidScope: r.pid_scope, startedAt: r.started_at, heartbeatAt: r.heartbeat_at }, where, at, leaseMs, self.alive),
    );
    const reaped: string[] = [];
    for (const r of dead) if ((yield* run(removeIfUnchanged(r.id, r.heartbeat_at))) > 0) reaped.push(r.id);
    return { reaped, live: 1 + seen.length - dead.length };
  }

  return {
    /** Registered and swept: what a caller's start-up recovery relies on. */
    *start(): SqlProgram<Sweep> {
      yield* register();
      return yield* reap();
    },
    /**
     * Renews this instance's row, inserts it again if it was deleted while this instance lived on (unless
     * `stillOpen` says it is closing: its row is to go), then reaps.
     */
    *beat(stillOpen: () => boolean): SqlProgram<Beat> {
      const renewed = yield* run(renew(id, now()));
      const registeredAgain = renewed === 0 && stillOpen();
      if (registeredAgain) yield* register();
      return { registeredAgain, ...(yield* reap()) };
    },
    *deregister(): SqlProgram<void> {
      yield* run(remove(id));
    },
    /** Whether `other` has a row: live, or dead and not deleted yet. */
    *isRegistered(other: string): SqlProgram<boolean> {
      return (yield* first(registered(other))) !== undefined;
    },
    /** isRegistered's query, for SQLite's synchronous `firstSync` (no program to drive: asked per agent listed). */
    registered,
  };
}

export type InstancesPrograms = ReturnType<typeof instancesPrograms>;
