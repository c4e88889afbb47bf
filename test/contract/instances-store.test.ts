/**
 * The instance registry's statements (store/instances/instances-store.ts) on both backends, driven as each
 * registry drives them: SQLite's every program one transaction, PostgreSQL's statement by statement on the
 * pool. A dead row is deleted once whichever instance sees it first, a beat that lands between the
 * judgement and the delete saves its row, and an instance whose row went while it lived registers again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import type { Whereabouts } from '../../src/store/instances-liveness.js';
import { newInstanceId } from '../../src/store/instances-registry.js';
import { instancesPrograms, type InstancesPrograms } from '../../src/store/instances/instances-store.js';
import type { InstancesTables } from '../../src/store/instances/instances-tables.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { sqlFor } from '../../src/store/sql/sql-builder.js';
import type { SqlDialect, SqlProgram, SqlStep } from '../../src/store/sql/sql-program.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';

const LEASE = 15_000;
/** Another machine: only the lease decides whether its instances are dead. */
const ELSEWHERE: Whereabouts = { host: 'node-2', pidScope: 'pid:[9]', pid: 4242, processStartedAt: 0 };

interface Backend {
  readonly dialect: SqlDialect;
  drive<R>(program: SqlProgram<R>): Promise<R>;
  close(): Promise<void>;
}

const backends: Record<string, () => Promise<Backend>> = {
  SQLite: async () => {
    const db = openDatabase(':memory:');
    const runner = createSqliteRunner(db);
    return { dialect: 'sqlite', drive: (p) => runner.write(p), close: async () => void db.close() };
  },
  PostgreSQL: async () => {
    await requirePostgres();
    const database = await freshDatabase();
    const pg = await openPostgres({ url: database.url, poolSize: 2, listen: false });
    const runner = createPostgresRunner(pg);
    return {
      dialect: 'postgres',
      drive: (p) => runner.read(p),
      close: async () => {
        await pg.close();
        await database.drop();
      },
    };
  },
};

/** Runs `before` ahead of the program's first DELETE: what another instance does between judgement and delete. */
function* beforeFirstDelete<R>(program: SqlProgram<R>, before: SqlStep): SqlProgram<R> {
  let pending: SqlStep | null = before;
  let next = program.next();
  while (!next.done) {
    const step = next.value;
    if (pending && 'sql' in step && /^delete/i.test(step.sql)) {
      yield pending;
      pending = null;
    }
    next = program.next(yield step);
  }
  return next.value;
}

for (const [name, open] of Object.entries(backends)) {
  describe(`the instance registry's statements on ${name}`, () => {
    let backend: Backend;
    afterEach(async () => backend.close());

    const instance = (over: { now?: () => number } = {}): { id: string; p: InstancesPrograms } => {
      const id = newInstanceId();
      const now = over.now ?? Date.now;
      return { id, p: instancesPrograms(backend.dialect, { id, where: ELSEWHERE, startedAt: now(), leaseMs: LEASE, now, alive: () => true }) };
    };

    it('registers, counts the live instances, and deletes a dead one once, reported by whichever instance saw it first', async () => {
      backend = await open();
      const stale = instance({ now: () => Date.now() - LEASE - 1 });
      expect(await backend.drive(stale.p.start())).toEqual({ reaped: [], live: 1 });
      const b = instance();
      expect(await backend.drive(b.p.start())).toEqual({ reaped: [stale.id], live: 1 });
      const c = instance();
      expect(await backend.drive(c.p.start())).toEqual({ reaped: [], live: 2 });
      expect(await backend.drive(c.p.isRegistered(stale.id))).toBe(false);
      expect(await backend.drive(c.p.isRegistered(b.id))).toBe(true);
      expect(await backend.drive(b.p.beat(() => true))).toEqual({ registeredAgain: false, reaped: [], live: 2 });
    });

    it('keeps a row that beat after it was judged dead: the late beat saves it', async () => {
      backend = await open();
      const late = instance({ now: () => Date.now() - LEASE - 1 });
      await backend.drive(late.p.start());
      const judge = instance();
      const { db } = sqlFor<InstancesTables>(backend.dialect);
      const lateBeat = db.updateTable('gateway_instances').set({ heartbeat_at: Date.now() }).where('id', '=', late.id).compile();
      expect(await backend.drive(beforeFirstDelete(judge.p.start(), lateBeat))).toEqual({ reaped: [], live: 1 });
      expect(await backend.drive(judge.p.isRegistered(late.id))).toBe(true);
    });

    it('registers again at its next beat when its row went while it lived, unless it is closing', async () => {
      backend = await open();
      const a = instance();
      await backend.drive(a.p.start());
      await backend.drive(a.p.deregister());
      expect(await backend.drive(a.p.beat(() => true))).toMatchObject({ registeredAgain: true });
      expect(await backend.drive(a.p.isRegistered(a.id))).toBe(true);
      await backend.drive(a.p.deregister());
      expect(await backend.drive(a.p.beat(() => false))).toMatchObject({ registeredAgain: false });
      expect(await backend.drive(a.p.isRegistered(a.id))).toBe(false);
    });

    it('deletes only its own row when it closes', async () => {
      backend = await open();
      const [a, b] = [instance(), instance()];
      await backend.drive(a.p.start());
      await backend.drive(b.p.start());
      await backend.drive(a.p.deregister());
      expect(await backend.drive(b.p.isRegistered(a.id))).toBe(false);
      expect(await backend.drive(b.p.isRegistered(b.id))).toBe(true);
    });
  });
}
