/** The program runner's core (src/store/sql): prepared queries and errors thrown back into a program. */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/db.js';
import { sqlFor } from '../../../src/store/sql/sql-builder.js';
import { first, prepared, preparedRow, rows, run, type SqlProgram } from '../../../src/store/sql/sql-program.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';

interface T {
  items: { id: string; n: number };
}

describe('prepared queries', () => {
  const { db } = sqlFor<T>('postgres');

  it('compiles once and binds each call its own arguments, in the places the query uses them', () => {
    const q = prepared((id: string, n: number) => db.selectFrom('items').selectAll().where('id', '=', id).where('n', '>', n).where('n', '<', sql<number>`${n} + 10`));
    const a = q('a', 1).compile();
    const b = q('b', 2).compile();
    expect(a.sql).toBe('select * from "items" where "id" = $1 and "n" > $2 and "n" < $3 + 10');
    expect(b.sql).toBe(a.sql);
    expect(a.parameters).toEqual(['a', 1, 1]);
    expect(b.parameters).toEqual(['b', 2, 2]);
  });

  it('keeps the values the builder wrote itself, and binds a whole row by name', () => {
    const page = prepared((id: string) => db.selectFrom('items').selectAll().where('id', '=', id).limit(3));
    expect(page('x').compile().parameters).toEqual(['x', 3]);
    const insert = preparedRow((row: { id: string; n: number }) => db.insertInto('items').values(row));
    expect(insert({ id: 'a', n: 1 }).compile()).toMatchObject({ sql: 'insert into "items" ("id", "n") values ($1, $2)', parameters: ['a', 1] });
    expect(insert({ id: 'b', n: 2 }).compile().parameters).toEqual(['b', 2]);
  });

  it('refuses a query one of whose arguments shaped the SQL instead of being a value', () => {
    const q = prepared((id: string, limit: number) => (limit > 0 ? db.selectFrom('items').selectAll().where('id', '=', id) : db.selectFrom('items').selectAll()));
    expect(() => q('a', 5)).toThrow(/2 of a prepared query's 2 arguments did not reach it as values/);
  });
});

describe('the SQLite runner', () => {
  const open = () => {
    const store = openDatabase(':memory:');
    store.exec('CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL)');
    return { store, runner: createSqliteRunner(store), db: sqlFor<T>('sqlite').db };
  };

  it('rolls a write program back when it throws, and hands a statement error to the program to catch', async () => {
    const { runner, db } = open();
    await runner.write(run(db.insertInto('items').values({ id: 'a', n: 1 })));
    function* failing(): SqlProgram<void> {
      yield* run(db.insertInto('items').values({ id: 'b', n: 2 }));
      throw new Error('stop');
    }
    await expect(runner.write(failing())).rejects.toThrow('stop');
    function* duplicate(): SqlProgram<string> {
      try {
        yield* run(db.insertInto('items').values({ id: 'a', n: 3 }));
        return 'inserted';
      } catch (err) {
        return (err as { code?: string }).code ?? 'no code';
      }
    }
    expect(await runner.write(duplicate())).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(await runner.read(rows(db.selectFrom('items').selectAll().orderBy('id')))).toEqual([{ id: 'a', n: 1 }]);
  });

  it('runs the programs asked for soon in one turn at its end, in order, each rolled back alone when it throws', async () => {
    const { runner, db } = open();
    function* failing(): SqlProgram<void> {
      yield* run(db.insertInto('items').values({ id: 'b', n: 2 }));
      throw new Error('stop');
    }
    const a = runner.writeSoon(run(db.insertInto('items').values({ id: 'a', n: 1 })));
    const b = runner.writeSoon(failing());
    const c = runner.writeSoon(first(db.selectFrom('items').select('n').where('id', '=', 'a')));
    // Nothing has run yet: the batch waits for the end of this turn.
    expect(runner.readSync(rows(db.selectFrom('items').selectAll()))).toEqual([]);
    const outcomes = await Promise.allSettled([a, b, c]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(outcomes[2]).toEqual({ status: 'fulfilled', value: { n: 1 } });
    expect(runner.readSync(rows(db.selectFrom('items').selectAll().orderBy('id')))).toEqual([{ id: 'a', n: 1 }]);
  });

  it('rejects every program of a batch whose commit fails', async () => {
    const { store, runner, db } = open();
    const a = runner.writeSoon(run(db.insertInto('items').values({ id: 'a', n: 1 })));
    const b = runner.writeSoon(run(db.insertInto('items').values({ id: 'b', n: 2 })));
    store.close();
    const outcomes = await Promise.allSettled([a, b]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  });

  it('binds booleans as 1 and 0, and runs the same program synchronously', () => {
    const { runner, db } = open();
    runner.writeSync(run(db.insertInto('items').values({ id: 'x', n: 0 })));
    expect(runner.readSync(first(db.selectFrom('items').select(sql<number>`${true} + ${false} + n`.as('sum')).where('id', '=', 'x')))).toEqual({ sum: 1 });
  });
});
