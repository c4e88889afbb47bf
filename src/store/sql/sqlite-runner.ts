/**
 * Programs on better-sqlite3, synchronously: a `write` is one IMMEDIATE transaction (store/db.ts
 * writeTransaction, for the reason given there) in which nothing else on the connection can interleave,
 * since no step awaits. Prepared statements are cached by their SQL text.
 */
import type { Statement } from 'better-sqlite3';
import type { Compilable } from 'kysely';
import { writeTransaction, type Db } from '../db.js';
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
  const inTransaction = writeTransaction(db, <R>(program: SqlProgram<R>): R => driveSync(program, execute));
  return {
    dialect: 'sqlite',
    read: async (program) => driveSync(program, execute),
    write: async (program) => inTransaction(program),
    readSync: (program) => driveSync(program, execute),
    writeSync: (program) => inTransaction(program),
    firstSync<R>(query: Compilable<R>): R | undefined {
      const { sql, parameters } = query.compile();
      return prepared(sql).get(...parameters.map(bindable)) as R | undefined;
    },
  };
}
