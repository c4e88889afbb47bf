/**
 * Retention of webhook history (issue 17): delivery records that reached an end (`delivered`, `failed`)
 * and events no delivery still needs are deleted once older than the retention, so the store does not
 * grow with every event forever. Pending and in-flight deliveries are never touched, whatever their age.
 *
 * Pruning runs in small batches, each its own short immediate transaction, with the event loop free
 * between them: a first run on a store that has never been pruned must not stall requests. Both tables
 * are scanned in rowid order, which is insertion order, so the old rows a batch looks for come first.
 */
import { writeTransaction, type Db } from './db.js';

export interface RetentionResult {
  readonly deliveries: number;
  readonly events: number;
}

export interface WebhookRetention {
  /** Deletes what is past the retention at `now`, in batches; resolves with the counts. */
  prune(now: number): Promise<RetentionResult>;
}

const BATCH = 500;

export function createWebhookRetention(db: Db, retentionMs: number): WebhookRetention {
  const oldDeliveries = db.prepare<[number, number]>(`
    DELETE FROM webhook_deliveries WHERE seq IN (
      SELECT seq FROM webhook_deliveries WHERE state IN ('delivered', 'failed') AND updated_at < ? ORDER BY seq LIMIT ?)`);
  const orphanEvents = db.prepare<[number, number]>(`
    DELETE FROM webhook_events WHERE rowid IN (
      SELECT e.rowid FROM webhook_events e
      WHERE e.created_at < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
      ORDER BY e.rowid LIMIT ?)`);
  const deleteBatch = (statement: typeof oldDeliveries, cutoff: number): number => writeTransaction(db, () => statement.run(cutoff, BATCH).changes)();
  const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  async function drain(statement: typeof oldDeliveries, cutoff: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = deleteBatch(statement, cutoff);
      total += n;
      if (n < BATCH) return total;
      await yieldToLoop();
    }
  }

  return {
    async prune(now) {
      const cutoff = now - retentionMs;
      // Deliveries first: an event is kept while any delivery of it is.
      const deliveries = await drain(oldDeliveries, cutoff);
      const events = await drain(orphanEvents, cutoff);
      return { deliveries, events };
    },
  };
}
