/**
 * The port a store built on programs (sql-program.ts) is given: it runs a program outside a transaction
 * (`read`: each statement on its own) or as one transaction (`write`). sqlite-runner.ts and
 * postgres-runner.ts implement it; the composition root picks one with the store's kind.
 */
import type { SqlDialect, SqlProgram, SqlStep } from './sql-program.js';

export interface SqlRunner {
  readonly dialect: SqlDialect;
  read<R>(program: SqlProgram<R>): Promise<R>;
  write<R>(program: SqlProgram<R>): Promise<R>;
  /**
   * As `write`, for a caller that only awaits the outcome: the runner may commit it with the others asked
   * for in the same event-loop turn (SQLite: one transaction at setImmediate, a savepoint each, so one
   * program's failure is its own). Its effects are not visible before the promise settles.
   */
  writeSoon<R>(program: SqlProgram<R>): Promise<R>;
}

/**
 * Drives a program with a synchronous executor: each step's result (or error, thrown into the program so
 * it may catch a constraint violation) is handed back until it returns.
 */
export function driveSync<R>(program: SqlProgram<R>, execute: (step: SqlStep) => unknown): R {
  let next = program.next();
  while (!next.done) {
    let result: unknown;
    try {
      result = execute(next.value);
    } catch (err) {
      next = program.throw(err);
      continue;
    }
    next = program.next(result);
  }
  return next.value;
}

/** As driveSync, awaiting each step. */
export async function driveAsync<R>(program: SqlProgram<R>, execute: (step: SqlStep) => Promise<unknown>): Promise<R> {
  let next = program.next();
  while (!next.done) {
    let result: unknown;
    try {
      result = await execute(next.value);
    } catch (err) {
      next = program.throw(err);
      continue;
    }
    next = program.next(result);
  }
  return next.value;
}
