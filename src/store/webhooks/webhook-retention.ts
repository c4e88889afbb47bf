/**
 * Retention of webhook history (issue 17), written once for both backends (issue 33): delivery records
 * that reached an end (`delivered`, `failed`) and events no delivery still needs are deleted once older
 * than the retention, so the store does not grow with every event forever. Pending and in-flight
 * deliveries are never touched, whatever their age. Deliveries go first: an event is kept while any
 * delivery of it is.
 *
 * Pruning runs in small batches, each its own short transaction, with the event loop free between them: a
 * first run on a store never pruned must not stall requests (SQLite) nor hold many row locks for long
 * (PostgreSQL). Both tables are walked in insertion order (deliveries by `seq`; events by SQLite's rowid
 * or PostgreSQL's `seq`), so the old rows a batch looks for come first.
 */
import { sql, type Kysely } from 'kysely';
import type { WebhookRetentionResult } from '../../core/store/webhooks-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { prepared, run, type SqlDialect } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { WebhooksTables } from './webhooks-tables.js';

/** Rows deleted per statement (and per transaction). */
export const PRUNE_BATCH = 500;

/** The events' insertion order: SQLite's table has no `seq` (table-schema.ts onlyIn). */
const eventOrder = (dialect: SqlDialect) => (dialect === 'postgres' ? sql.ref('e.seq') : sql.ref('e.rowid'));

function retentionQueries(db: Kysely<WebhooksTables>, dialect: SqlDialect) {
  const FINISHED = [sql.lit<'delivered'>('delivered'), sql.lit<'failed'>('failed')];
  return {
    oldDeliveries: prepared((cutoff: number, limit: number) =>
      db
        .deleteFrom('webhook_deliveries')
        .where(
          'seq',
          'in',
          db.selectFrom('webhook_deliveries').select('seq').where('state', 'in', FINISHED).where('updated_at', '<', cutoff).orderBy('seq').limit(limit),
        ),
    ),
    orphanEvents: prepared((cutoff: number, limit: number) =>
      db
        .deleteFrom('webhook_events')
        .where(
          'id',
          'in',
          db
            .selectFrom('webhook_events as e')
            .select('e.id')
            .where('e.created_at', '<', cutoff)
            .where(({ not, exists, selectFrom }) => not(exists(selectFrom('webhook_deliveries as d').select(sql.lit(1).as('one')).whereRef('d.event_id', '=', 'e.id'))))
            .orderBy(eventOrder(dialect))
            .limit(limit),
        ),
    ),
  };
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Deletes what is past `retentionMs` at `now`, batch by batch; resolves with the counts. */
export async function pruneWebhookHistory(runner: SqlRunner, now: number, retentionMs: number): Promise<WebhookRetentionResult> {
  const q = retentionQueries(sqlFor<WebhooksTables>(runner.dialect).db, runner.dialect);
  const cutoff = now - retentionMs;
  async function drain(statement: typeof q.oldDeliveries): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await runner.write(run(statement(cutoff, PRUNE_BATCH)));
      total += n;
      if (n < PRUNE_BATCH) return total;
      await yieldToLoop();
    }
  }
  const deliveries = await drain(q.oldDeliveries);
  const events = await drain(q.orphanEvents);
  return { deliveries, events };
}
