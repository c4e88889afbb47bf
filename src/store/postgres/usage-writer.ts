/**
 * The store writer thread's PostgreSQL side for the usage ledger (issue 12, `storage.kind: postgres`):
 * each batch (one journal segment) goes in with its marker in one transaction over the thread's own
 * connection (the program of store/usage/usage-ledger-writes.ts SQLite's batches run too), so neither the
 * INSERT's encoding nor its round trip touches the event loop. Batches are written one after the other, in
 * the order the ledger cut them. A connection that cannot be opened (PostgreSQL down) fails the batch, which
 * the ledger sends again later; the next batch opens anew.
 */
import type { LedgerRow } from '../../core/store/usage-store.js';
import { createPostgresRunner } from '../sql/postgres-runner.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { forgetSegments, storeBatch } from '../usage/usage-ledger-writes.js';
import { openPostgres, type PgStore, type PgTimeouts } from './pg-store.js';

/**
 * A batch runs on this thread's own connection and holds no request, so no statement bound: after a long
 * outage a segment can be large. The lock bound stays: a batch stuck behind a lock held for long would
 * sit on the rollup rows it has upserted, which the other replicas' batches wait for; failed, it is sent
 * again later.
 */
const WRITER_TIMEOUTS: PgTimeouts = { statementMs: 0, lockMs: 2_000 };

export interface PgUsageWriter {
  /**
   * Stores the rows (with the segment's marker when there is one) and drops the markers of `forget`,
   * segments whose files are gone, in the same transaction.
   */
  store(rows: readonly LedgerRow[], segment: string | null, forget: readonly string[]): Promise<void>;
  /** After the batches still being written: drops the markers of `forget` (best effort) and closes the connection. */
  close(forget: readonly string[]): Promise<void>;
}

export function createPgUsageWriter(url: string): PgUsageWriter {
  let opened: Promise<{ pg: PgStore; runner: SqlRunner }> | null = null;
  const open = (): Promise<{ pg: PgStore; runner: SqlRunner }> => {
    opened ??= openPostgres({ url, poolSize: 1, listen: false, timeouts: WRITER_TIMEOUTS }).then(
      (pg) => ({ pg, runner: createPostgresRunner(pg) }),
      (err: unknown) => {
        opened = null;
        throw err;
      },
    );
    return opened;
  };
  let last: Promise<unknown> = Promise.resolve();
  return {
    store(rows, segment, forget) {
      const run = async (): Promise<void> => {
        const { runner } = await open();
        await runner.write(storeBatch(rows, segment, forget));
      };
      const done = last.then(run, run);
      last = done.catch(() => undefined);
      return done;
    },
    async close(forget) {
      await last;
      const pg = await opened?.catch(() => null);
      if (!pg) return;
      // Left behind, markers only cost a row each: a failure here is not worth holding the shutdown.
      if (forget.length > 0) await pg.runner.write(forgetSegments(forget)).catch(() => undefined);
      await pg.pg.close();
    },
  };
}
