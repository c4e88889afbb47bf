/**
 * A store operation written once for both backends (issue 33, "storage defined once"): a generator that
 * yields its queries, built with Kysely for the backend's dialect, and receives each one's result. The
 * runner of the backend drives it:
 * - SQLite (sqlite-runner.ts) runs every step synchronously on better-sqlite3, so a write program is one
 *   synchronous IMMEDIATE transaction, exactly as the hand-written repositories were: nothing else on the
 *   connection can run between two of its statements.
 * - PostgreSQL (postgres-runner.ts) awaits each step on one pooled connection, inside BEGIN/COMMIT.
 * Why generators rather than async functions: an async program on SQLite would yield to the event loop
 * between statements with the transaction open, and any other write on the same connection would land
 * inside it. A generator hands control back only to its runner.
 *
 * Where the dialects must differ (locking clauses, upserts, change notices, webhook events), a program
 * asks `sql.dialect`, or yields a `native` step: two small functions, one per backend, in one place.
 */
import type { Compilable, CompiledQuery, Kysely, QueryExecutorProvider, RawBuilder } from 'kysely';
import type { Db } from '../db.js';
import type { PgQueryable } from '../postgres/pg-store.js';

export type SqlDialect = 'sqlite' | 'postgres';

/** What a program is given: the query builder of its tables in the backend's dialect. */
export interface Sql<Tables> {
  readonly dialect: SqlDialect;
  /** Compiles only; never executes (the runner does). */
  readonly db: Kysely<Tables>;
}

/** The outcome of one query: its rows (SELECT, or RETURNING) and the rows it changed. */
export interface QueryOutcome {
  readonly rows: readonly unknown[];
  readonly changes: number;
}

/** A step done by backend-specific code on the native connection, inside the program's transaction. */
export interface NativeStep<R> {
  readonly kind: 'native';
  sqlite(db: Db): R;
  postgres(client: PgQueryable): Promise<R>;
}

export type SqlStep = CompiledQuery | NativeStep<unknown>;

/** A store operation: yields steps, gets back each one's result, returns R. */
export type SqlProgram<R> = Generator<SqlStep, R, unknown>;

const isNative = (step: SqlStep): step is NativeStep<unknown> => 'kind' in step && step.kind === 'native';
export { isNative };

/** Stands for a prepared query's argument (by position) or value (by name) while its SQL is compiled once. */
class Slot {
  constructor(readonly key: number | string) {}
}

/** The compiled query with each slot's parameter taken from the call. */
function bound<R>(template: CompiledQuery<R>, valueOf: (key: number | string) => unknown): Compilable<R> {
  const parameters = template.parameters.map((p) => (p instanceof Slot ? valueOf(p.key) : p));
  return { compile: () => ({ ...template, parameters }) };
}

/** Compiles `build` with slots; refuses it when a slot did not reach the query as a value. */
function compileWithSlots<R>(build: () => Compilable<R>, keys: readonly (number | string)[]): CompiledQuery<R> {
  const compiled = build().compile();
  const seen = new Set(compiled.parameters.filter((p): p is Slot => p instanceof Slot).map((p) => p.key));
  const missing = keys.filter((k) => !seen.has(k));
  if (missing.length > 0) {
    throw new Error(`${missing.length} of a prepared query's ${keys.length} arguments did not reach it as values (they shaped the SQL instead): build that query per call`);
  }
  return compiled;
}

/**
 * A query compiled once, its arguments bound per call: compiling costs ~15-20 us (a join with a subquery,
 * ~200 us), more than the statement itself on SQLite, so the store paths taken per request, per batch
 * line, per invocation or per dashboard page use this. Only for a query whose SQL does not depend on its
 * arguments' values (no `in` lists, no `$if` on an argument, no rows of varying count, not `sql.lit`, not
 * null for `is`): every argument must reach the query as a value, which is checked at the first call (an
 * argument that shaped the query instead is an error there, not a wrong statement).
 */
export function prepared<A extends readonly unknown[], R>(build: (...args: A) => Compilable<R>): (...args: A) => Compilable<R> {
  let template: CompiledQuery<R> | null = null;
  return (...args: A): Compilable<R> => {
    if (!template) {
      const keys = args.map((_, i) => i);
      template = compileWithSlots(() => build(...(keys.map((i) => new Slot(i)) as unknown as A)), keys);
    }
    return bound(template, (key) => args[key as number]);
  };
}

/**
 * `prepared` for a statement that takes a whole row (an insert, or an update's set): its values by name.
 * Every call must pass the same keys.
 */
export function preparedRow<V extends Record<string, unknown>, R>(build: (values: V) => Compilable<R>): (values: V) => Compilable<R> {
  let template: CompiledQuery<R> | null = null;
  return (values: V): Compilable<R> => {
    if (!template) {
      const keys = Object.keys(values);
      template = compileWithSlots(() => build(Object.fromEntries(keys.map((k) => [k, new Slot(k)])) as V), keys);
    }
    return bound(template, (key) => values[key as string]);
  };
}

/** A raw `sql` template as a query a program can yield (for what the builder cannot say). */
export function rawQuery<R>(builder: RawBuilder<R>, db: QueryExecutorProvider): Compilable<R> {
  return { compile: () => builder.compile(db) };
}

/** Every row the query returns. */
export function* rows<R>(query: Compilable<R>): SqlProgram<R[]> {
  const outcome = (yield query.compile()) as QueryOutcome;
  return outcome.rows as R[];
}

/** The first row, or undefined. */
export function* first<R>(query: Compilable<R>): SqlProgram<R | undefined> {
  const outcome = (yield query.compile()) as QueryOutcome;
  return outcome.rows[0] as R | undefined;
}

/** Runs a statement; returns how many rows it changed. */
export function* run(query: Compilable<unknown>): SqlProgram<number> {
  const outcome = (yield query.compile()) as QueryOutcome;
  return outcome.changes;
}

/** Backend-specific code, inside the program's transaction (see NativeStep). */
export function* native<R>(step: Omit<NativeStep<R>, 'kind'>): SqlProgram<R> {
  return (yield { kind: 'native', sqlite: step.sqlite, postgres: step.postgres } as NativeStep<unknown>) as R;
}

/** SQLite has no boolean: an expression such as `count(...) > 0` reads back as 0 or 1 there. */
export const truthy = (value: unknown): boolean => value === true || value === 1 || value === 1n;
