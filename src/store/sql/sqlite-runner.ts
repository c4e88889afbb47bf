/**
 * Programs on better-sqlite3, synchronously: a `write` is one IMMEDIATE transaction (store/db.ts
 * writeTransaction, for the reason given there) in which nothing else on the connection can interleave,
 * since no step awaits. Prepared statements are cached by their SQL text.
 */
import type { Statement } from 'better-sqlite3';
import type { Compilable } from 'kysely';
import { savepoint, writeTransaction, type Db } from '../db.js';
import { isNative, type QueryOutcome, type SqlProgram, type SqlStep } from './sql-program.js';
import { driveSync, type SqlRunner } from './sql-runner.js';

/** Distinct statements kept prepared; past it the cache starts over (queries with IN lists vary in shape). */
const STATEMENT_CACHE_SIZE = 512;

/** better-sqlite3 binds no booleans: SQLite stores them as 1 and 0. */
const bindable = (value: unknown): unknown => (value === true ? 1 : value === false ? 0 : value);

/** Also synchronous, for the callers that are (the CLI, the SQLite-only systems). */
export interface SqliteRunner extends SqlRunner {
  readSync<R>(program: SqlProgram<R>): R;
  writeSync<R>(program: SqlProgram<R>): R;
  /**
   * `readSync(first(query))` without a program to drive: the first row straight from the statement, for a
   * lookup asked often (the generator and the rows array cost ~15% of a short one).
   */
  firstSync<R>(query: Compilable<R>): R | undefined;
}

export function createSqliteRunner(db: Db): SqliteRunner {
  const statements = new Map<string, Statement>();
  const prepared = (text: string): Statement => {
    let stmt = statements.get(text);
    if (!stmt) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      statements.set(text, (stmt = db.prepare(text)));
    }
    return stmt;
  };
  const execute = (step: SqlStep): unknown => {
    if (isNative(step)) return step.sqlite(db);
    const stmt = prepared(step.sql);
    const params = step.parameters.map(bindable);
    if (stmt.reader) {
      const found = stmt.all(...params);
      return { rows: found, changes: found.length } satisfies QueryOutcome;
    }
    return { rows: [], changes: stmt.run(...params).changes } satisfies QueryOutcome;
  };
  const drive = <R>(program: SqlProgram<R>): R => driveSync(program, execute);
  const inTransaction = writeTransaction(db, drive);
  const writeSoon = grouped(db, savepoint(db, drive));
  return {
    dialect: 'sqlite',
    read: async (program) => drive(program),
    write: async (program) => inTransaction(program),
    writeSoon,
    readSync: drive,
    writeSync: inTransaction,
    firstSync<R>(query: Compilable<R>): R | undefined {
      const { sql, parameters } = query.compile();
      return prepared(sql).get(...parameters.map(bindable)) as R | undefined;
    },
  };
}

interface Queued {
  readonly program: SqlProgram<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

/**
 * Programs asked for in one event-loop turn, run together at setImmediate: writes in one IMMEDIATE
 * transaction, each in a savepoint (`each`, db.ts), so a program that throws is rolled back
 * alone and its promise rejects, and a commit that fails rejects them all. A stored Response's commit was
 * ~55 us of a streamed turn, nearly all of it the transaction's own (the locks, the WAL append): the turns
 * finishing beside it now share them (issue 35). The reads of a turn were grouped the same way until
 * their only caller, the outbox's "anyone subscribed?", answered at once (webhook-outbox.ts says why).
 */
function grouped(db: Db, each: (program: SqlProgram<unknown>) => unknown): <R>(program: SqlProgram<R>) => Promise<R> {
  let queued: Queued[] = [];
  const together = writeTransaction(db, (due: readonly Queued[]) =>
    due.map((q): Outcome => {
      try {
        return { ok: true, value: each(q.program) };
      } catch (err) {
        return { ok: false, err };
      }
    }),
  );
  const run = (): void => {
    const due = queued;
    queued = [];
    let outcomes: Outcome[];
    try {
      outcomes = together(due);
    } catch (err) {
      for (const q of due) q.reject(err);
      return;
    }
    outcomes.forEach((o, i) => {
      const q = due[i] as Queued;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.err);
    });
  };
  return <R>(program: SqlProgram<R>) =>
    new Promise<R>((resolve, reject) => {
      queued.push({ program, resolve: resolve as (value: unknown) => void, reject });
      if (queued.length === 1) setImmediate(run);
    });
}
