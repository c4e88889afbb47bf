/**
 * The batches port on PostgreSQL (tables: migrations/008-batches.ts). Every replica's scheduler claims
 * from the same lines: the claim is one statement that locks the next ready line `FOR UPDATE SKIP LOCKED`
 * (a replica claiming at the same moment skips it instead of waiting, and PostgreSQL re-checks the row's
 * state after a wait, so a line another replica just marked running is never taken) and marks it running
 * for this instance. A running line whose instance left `gateway_instances` is failed "interrupted"
 * (the resume rule, as in SQLite's store/batches-repo.ts). Moves lock the batch row, so two replicas
 * cannot both move a batch out of one state; a move's event is fanned out in its transaction.
 */
import type pg from 'pg';
import { canMove } from '../../core/batches/batch-machine.js';
import type { BatchesStore, BatchRow, LineCounts, LineRow } from '../../core/store/batches-store.js';
import type { PgStore } from './pg-store.js';
import { emitEventIn } from './webhooks-store.js';

/** The change notice that a batch was validated: every replica's scheduler claims at once. */
export const BATCH_LINES_TOPIC = 'batches.lines';

/** Lines inserted per statement at validation (a batch may hold 50,000). */
const INSERT_CHUNK = 1000;

const READY = `b.status = 'in_progress' AND b.expires_at > $1 AND l.state = 'pending'`;

export function createPgBatchesStore(store: PgStore, owner: string): BatchesStore {
  const { pool } = store;
  const rowOf = async (db: pg.Pool | pg.PoolClient, id: string, lock = ''): Promise<BatchRow | null> =>
    (await db.query<BatchRow>(`SELECT * FROM batches WHERE id = $1 ${lock}`, [id])).rows[0] ?? null;
  const countsOf = async (db: pg.Pool | pg.PoolClient, id: string): Promise<LineCounts> => {
    const { rows } = await db.query<LineCounts>(
      `SELECT count(*)::int AS total,
         (count(*) FILTER (WHERE state = 'done' AND status_code BETWEEN 200 AND 299))::int AS completed,
         (count(*) FILTER (WHERE state = 'done' AND (status_code IS NULL OR status_code NOT BETWEEN 200 AND 299)))::int AS failed,
         (count(*) FILTER (WHERE state = 'pending'))::int AS pending,
         (count(*) FILTER (WHERE state = 'running'))::int AS running
       FROM batch_lines WHERE batch_id = $1`,
      [id],
    );
    return rows[0] ?? { total: 0, completed: 0, failed: 0, pending: 0, running: 0 };
  };

  return {
    async insert(b) {
      await pool.query(
        `INSERT INTO batches (id, project_id, key_id, workspace_named, workspace_named_by, endpoint, input_file_id, completion_window, status, metadata, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'validating', $9, $10, $11)`,
        [b.id, b.project_id, b.key_id, b.workspace_named, b.workspace_named_by, b.endpoint, b.input_file_id, b.completion_window, b.metadata, b.created_at, b.expires_at],
      );
    },
    get: (id) => rowOf(pool, id),
    async page(projectId, beforeSeq, limit) {
      const before = Number.isFinite(beforeSeq) ? beforeSeq : Number.MAX_SAFE_INTEGER;
      return (await pool.query<BatchRow>('SELECT * FROM batches WHERE project_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [projectId, before, limit])).rows;
    },
    async live() {
      return (await pool.query<BatchRow>("SELECT * FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') ORDER BY seq")).rows;
    },
    async activity(id) {
      const { rows } = await pool.query<{ pending: boolean; running: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM batch_lines WHERE batch_id = $1 AND state = 'pending') AS pending,
                EXISTS (SELECT 1 FROM batch_lines WHERE batch_id = $1 AND state = 'running') AS running`,
        [id],
      );
      return rows[0] ?? { pending: false, running: false };
    },
    counts: (id) => countsOf(pool, id),
    async line(id, idx) {
      return (await pool.query<LineRow>('SELECT * FROM batch_lines WHERE batch_id = $1 AND idx = $2', [id, idx])).rows[0] ?? null;
    },
    async doneLines(id) {
      return (await pool.query<LineRow>("SELECT * FROM batch_lines WHERE batch_id = $1 AND state = 'done' ORDER BY idx", [id])).rows;
    },
    validated: (id, lines, now) =>
      store.transaction(async (client) => {
        // The batch row's lock: a cancel, or another replica validating the same batch, waits, then finds it moved.
        if ((await rowOf(client, id, 'FOR UPDATE'))?.status !== 'validating') return false;
        for (let at = 0; at < lines.length; at += INSERT_CHUNK) {
          const chunk = lines.slice(at, at + INSERT_CHUNK);
          await client.query(
            `INSERT INTO batch_lines (batch_id, idx, custom_id, body, state, error_code, error_message)
             SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
            [
              id,
              chunk.map((_, i) => at + i),
              chunk.map((l) => (l.ok ? l.line.customId : l.error.customId)),
              chunk.map((l) => (l.ok ? l.line.body.toString('utf8') : null)),
              chunk.map((l) => (l.ok ? 'pending' : 'done')),
              chunk.map((l) => (l.ok ? null : l.error.code)),
              chunk.map((l) => (l.ok ? null : l.error.message)),
            ],
          );
        }
        await client.query("UPDATE batches SET status = 'in_progress', in_progress_at = $2 WHERE id = $1", [id, now]);
        return true;
      }),
    async claim(now) {
      const { rows } = await pool.query<{ batch_id: string; idx: number }>(
        // Batch by batch in creation order, each one's first ready line through the pending index in file
        // order: a claim reads a few index entries, not every pending line of a 50,000-line batch.
        `WITH next AS (
           SELECT l.batch_id, l.idx FROM batches b CROSS JOIN LATERAL (
             SELECT batch_id, idx FROM batch_lines
             WHERE batch_id = b.id AND state = 'pending' AND not_before <= $1
             ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED) l
           WHERE b.status = 'in_progress' AND b.expires_at > $1
           ORDER BY b.seq LIMIT 1)
         UPDATE batch_lines l SET state = 'running', owner_instance = $2 FROM next
         WHERE l.batch_id = next.batch_id AND l.idx = next.idx
         RETURNING l.batch_id, l.idx`,
        [now, owner],
      );
      const claimed = rows[0];
      if (claimed) return { batchId: claimed.batch_id, index: claimed.idx };
      // Also lines ready now that another replica held locked: asked again at once (a millisecond).
      const next = await pool.query<{ at: number | null }>(`SELECT min(l.not_before) AS at FROM batches b JOIN batch_lines l ON l.batch_id = b.id WHERE ${READY}`, [now]);
      const at = next.rows[0]?.at ?? null;
      return { waitMs: at === null ? null : Math.max(1, at - now) };
    },
    async settle(id, idx, outcome) {
      if (outcome.kind === 'answered') {
        await pool.query("UPDATE batch_lines SET state = 'done', status_code = $3, request_id = $4, response = $5 WHERE batch_id = $1 AND idx = $2", [
          id,
          idx,
          outcome.statusCode,
          outcome.requestId,
          outcome.body,
        ]);
      } else {
        await pool.query("UPDATE batch_lines SET state = 'done', error_code = $3, error_message = $4 WHERE batch_id = $1 AND idx = $2", [id, idx, outcome.code, outcome.message]);
      }
    },
    async defer(id, idx, notBefore) {
      await pool.query("UPDATE batch_lines SET state = 'pending', not_before = $3 WHERE batch_id = $1 AND idx = $2", [id, idx, notBefore]);
    },
    async interruptRunning(message) {
      const { rowCount } = await pool.query(
        `UPDATE batch_lines SET state = 'done', error_code = 'interrupted', error_message = $1
         WHERE state = 'running' AND (owner_instance IS NULL OR owner_instance NOT IN (SELECT id FROM gateway_instances))`,
        [message],
      );
      return rowCount ?? 0;
    },
    move: (id, from, to, now, extras = {}) =>
      store.transaction(async (client) => {
        const row = await rowOf(client, id, 'FOR UPDATE');
        if (!row || !from.includes(row.status) || !canMove(row.status, to)) return false;
        // `to` is a BatchStatus: its column name is one of the table's, never caller text.
        await client.query(`UPDATE batches SET status = $2, ${to}_at = $3 WHERE id = $1`, [id, to, now]);
        if (extras.files) await client.query('UPDATE batches SET output_file_id = $2, error_file_id = $3 WHERE id = $1', [id, extras.files.output, extras.files.error]);
        const after = extras.event ? await rowOf(client, id) : null;
        const event = after && extras.event ? extras.event(after, await countsOf(client, id)) : null;
        if (event) await emitEventIn(store, client, row.project_id, event.type, event.data, now);
        return true;
      }),
    async setErrors(id, errors) {
      await pool.query('UPDATE batches SET errors = $2 WHERE id = $1', [id, JSON.stringify(errors)]);
    },
    async expirePending(id, message) {
      const { rowCount } = await pool.query("UPDATE batch_lines SET state = 'done', error_code = 'batch_expired', error_message = $2 WHERE batch_id = $1 AND state = 'pending'", [
        id,
        message,
      ]);
      return rowCount ?? 0;
    },
  };
}
