/**
 * An outbox for SQLite store contracts that records each event's type in a table of the same file: it
 * commits or rolls back with the caller's transaction, as the real outbox's rows do (a claim whose send
 * failed must leave no event). The events' own rows are the outbox's contract; here: which, in what order.
 */
import type { EventOutbox } from '../../src/core/webhooks/outbox.js';
import type { Db } from '../../src/store/db.js';

export function recordingOutbox(db: Db): EventOutbox & { types(): string[] } {
  db.exec('CREATE TABLE IF NOT EXISTS contract_events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO contract_events (type) VALUES (?)');
  return {
    emit: (_projectId, type) => (insert.run(type), 1),
    emitBudgetThreshold: () => 0,
    types: () => db.prepare<[], { type: string }>('SELECT type FROM contract_events ORDER BY seq').all().map((r) => r.type),
  };
}
