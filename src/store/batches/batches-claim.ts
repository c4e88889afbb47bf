/**
 * The claim of the next ready line: the one batches query whose dialects differ.
 * - SQLite: one writer at a time (the program runs in an IMMEDIATE transaction), so reading the next
 *   ready line and marking it running cannot race.
 * - PostgreSQL: every replica claims from the same lines. One statement locks the next ready line
 *   `FOR UPDATE SKIP LOCKED` (a replica claiming at the same moment skips it instead of waiting, and
 *   PostgreSQL re-checks the row's state after a wait, so a line another replica just marked running is
 *   never taken) and marks it running for this instance; batch by batch in creation order, each one's
 *   first ready line through the pending index, so a claim reads a few index entries, not every pending
 *   line of a 50,000-line batch.
 * Both: a batch past its window starts no line (its pending lines fail batch_expired when finalized).
 */
import { sql, type Kysely } from 'kysely';
import type { ClaimedLine, NothingReady } from '../../core/batches/batch-scheduler.js';
import { first, prepared, rawQuery, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import { LIMIT_ONE } from '../sql/sql-builder.js';
import type { BatchesTables } from './batches-tables.js';

export type ClaimQueries = ReturnType<typeof claimQueries>;

export function* claimProgram(q: ClaimQueries, owner: string | null, now: number): SqlProgram<ClaimedLine | NothingReady> {
  const claimed = yield* q.claimNext(owner, now);
  if (claimed) return { batchId: claimed.batch_id, index: claimed.idx };
  // Lines deferred by a rate limiter (and, on PostgreSQL, ready ones another replica held locked: asked
  // again in a millisecond).
  const at = (yield* first(q.nextDeferred(now)))?.at ?? null;
  return { waitMs: at === null ? null : Math.max(1, at - now) };
}

type Claimed = { batch_id: string; idx: number } | undefined;

/** The claim's statements for the dialect, compiled once. */
export function claimQueries(db: Kysely<BatchesTables>, dialect: SqlDialect) {
  const ready = (now: number) =>
    db
      .selectFrom('batches as b')
      .innerJoin('batch_lines as l', 'l.batch_id', 'b.id')
      .where('b.status', '=', sql.lit<'in_progress'>('in_progress'))
      .where('b.expires_at', '>', now)
      .where('l.state', '=', sql.lit<'pending'>('pending'));
  const nextDeferred = prepared((now: number) => ready(now).select(sql<number | null>`min(l.not_before)`.as('at')));
  const nextReady = prepared((now: number) => ready(now).select(['l.batch_id', 'l.idx']).where('l.not_before', '<=', now).orderBy('b.seq').orderBy('l.idx').limit(LIMIT_ONE));
  // A running line records the instance that sends it (migration 016): only that instance's death fails it.
  const markRunning = prepared((owner: string | null, id: string, idx: number) =>
    db.updateTable('batch_lines').set({ state: 'running', owner_instance: owner }).where('batch_id', '=', id).where('idx', '=', idx).where('state', '=', sql.lit<'pending'>('pending')),
  );
  const claimOnPostgres = prepared((owner: string | null, now: number) =>
    rawQuery(
      sql<{ batch_id: string; idx: number }>`
        WITH next AS (
          SELECT l.batch_id, l.idx FROM batches b CROSS JOIN LATERAL (
            SELECT batch_id, idx FROM batch_lines
            WHERE batch_id = b.id AND state = 'pending' AND not_before <= ${now}
            ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED) l
          WHERE b.status = 'in_progress' AND b.expires_at > ${now}
          ORDER BY b.seq LIMIT 1)
        UPDATE batch_lines l SET state = 'running', owner_instance = ${owner} FROM next
        WHERE l.batch_id = next.batch_id AND l.idx = next.idx
        RETURNING l.batch_id, l.idx`,
      db,
    ),
  );

  function* claimOnSqlite(owner: string | null, now: number): SqlProgram<Claimed> {
    const next = yield* first(nextReady(now));
    if (next) yield* run(markRunning(owner, next.batch_id, next.idx));
    return next;
  }

  return {
    nextDeferred,
    claimNext: (owner: string | null, now: number): SqlProgram<Claimed> => (dialect === 'postgres' ? first(claimOnPostgres(owner, now)) : claimOnSqlite(owner, now)),
  };
}
