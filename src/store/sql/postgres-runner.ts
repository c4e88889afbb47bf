/**
 * Programs on PostgreSQL: a `write` runs on one pooled connection inside BEGIN/COMMIT (pg-store.ts
 * transaction: rolled back when the program throws), a `read` statement by statement on the pool.
 */
import type { PgQueryable, PgStore } from '../postgres/pg-store.js';
import { isNative, type QueryOutcome, type SqlStep } from './sql-program.js';
import { driveAsync, type SqlRunner } from './sql-runner.js';

export function createPostgresRunner(store: Pick<PgStore, 'pool' | 'transaction'>): SqlRunner {
  const executeOn =
    (db: PgQueryable) =>
    async (step: SqlStep): Promise<unknown> => {
      if (isNative(step)) return step.postgres(db);
      const result = await db.query(step.sql, step.parameters as unknown[]);
      return { rows: result.rows, changes: result.rowCount ?? 0 } satisfies QueryOutcome;
    };
  const onPool = executeOn(store.pool);
  const read: SqlRunner['read'] = (program) => driveAsync(program, onPool);
  const write: SqlRunner['write'] = (program) => store.transaction((client) => driveAsync(program, executeOn(client)));
  // The soon variants are the plain ones: the pool already runs concurrent transactions side by side.
  return { dialect: 'postgres', read, write, writeSoon: write };
}
