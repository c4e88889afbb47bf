/**
 * The batches storage port (src/core/store/batches-store.ts): one suite, run against SQLite and
 * PostgreSQL by batches-store.test.ts. Projects `proj_a` and `proj_b` exist; the store claims as instance
 * `OWNER`, which the fixture registers as live; `events()` lists the batch events emitted, oldest first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseBatchLine } from '../../src/core/batches/batch-lines.js';
import type { ClaimedLine, NothingReady } from '../../src/core/batches/batch-scheduler.js';
import type { BatchesStore, BatchRow, NewBatch } from '../../src/core/store/batches-store.js';

export const OWNER = 'inst_contract';

export interface BatchesStoreFixture {
  /** Claims as OWNER. */
  readonly store: BatchesStore;
  /** Deletes OWNER's registration, as a sibling's sweep does for a dead one. */
  unregister(): Promise<void>;
  events(): Promise<string[]>;
  close(): Promise<void>;
}

const NOW = 1_700_000_000_000;
const DAY = 86_400_000;

let n = 0;
const newBatch = (projectId = 'proj_a', expiresIn = DAY): NewBatch => {
  n += 1;
  return {
    id: `batch_${String(n).padStart(24, '0')}`,
    project_id: projectId,
    key_id: 'key_1',
    workspace_named: null,
    workspace_named_by: '',
    endpoint: '/v1/chat/completions',
    input_file_id: 'file-1',
    completion_window: '24h',
    metadata: null,
    created_at: NOW,
    expires_at: NOW + expiresIn,
  };
};
const text = (customId: string) => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [] } });
const parsed = (...texts: string[]) => {
  const seen = new Set<string>();
  return texts.map((t) => parseBatchLine(t, '/v1/chat/completions', seen));
};
const isClaim = (c: ClaimedLine | NothingReady): c is ClaimedLine => 'batchId' in c;

export function batchesStoreContract(name: string, open: () => Promise<BatchesStoreFixture>): void {
  describe(`batches store: ${name}`, () => {
    const opened: BatchesStoreFixture[] = [];
    const fixture = async (): Promise<BatchesStoreFixture> => {
      const f = await open();
      opened.push(f);
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    /** A batch validated with `texts` as its lines. */
    const running = async (store: BatchesStore, texts: string[], batch = newBatch()): Promise<string> => {
      await store.insert(batch);
      expect(await store.validated(batch.id, parsed(...texts), NOW)).toBe(true);
      return batch.id;
    };

    it('stores batches, pages a project newest first after a cursor, and lists the live ones', async () => {
      const { store } = await fixture();
      const [a, b, c] = [newBatch(), newBatch(), newBatch('proj_b')];
      for (const x of [a, b, c]) await store.insert(x);
      expect(await store.get(a.id)).toMatchObject({ ...a, status: 'validating', errors: null, output_file_id: null, in_progress_at: null });
      expect(await store.get('batch_nope')).toBeNull();
      const ids = (rows: BatchRow[]) => rows.map((r) => r.id);
      expect(ids(await store.page('proj_a', Infinity, 10))).toEqual([b.id, a.id]);
      const first = await store.get(b.id);
      expect(ids(await store.page('proj_a', first!.seq, 10))).toEqual([a.id]);
      expect(ids(await store.live())).toEqual([a.id, b.id, c.id]);
      await store.setErrors(a.id, { object: 'list', data: [] });
      expect(await store.move(a.id, ['validating'], 'failed', NOW + 1)).toBe(true);
      expect(await store.get(a.id)).toMatchObject({ status: 'failed', failed_at: NOW + 1, errors: '{"object":"list","data":[]}' });
      expect(ids(await store.live())).toEqual([b.id, c.id]);
    });

    it('validates once: lines stored (invalid ones already done), in_progress; a second validation stores nothing', async () => {
      const { store } = await fixture();
      const id = await running(store, [text('a'), 'not json', text('c')]);
      expect(await store.get(id)).toMatchObject({ status: 'in_progress', in_progress_at: NOW });
      expect(await store.counts(id)).toEqual({ total: 3, completed: 0, failed: 1, pending: 2, running: 0 });
      expect(await store.line(id, 0)).toMatchObject({ idx: 0, custom_id: 'a', state: 'pending' });
      expect(await store.line(id, 1)).toMatchObject({ state: 'done', body: null, error_code: expect.any(String) as unknown });
      expect(await store.validated(id, parsed(text('x')), NOW)).toBe(false);
      expect((await store.counts(id)).total).toBe(3);
      const cancelled = newBatch();
      await store.insert(cancelled);
      expect(await store.move(cancelled.id, ['validating'], 'cancelling', NOW)).toBe(true);
      expect(await store.validated(cancelled.id, parsed(text('a')), NOW)).toBe(false);
      expect((await store.counts(cancelled.id)).total).toBe(0);
    });

    it('claims lines oldest batch first in file order, each once however many claims race', async () => {
      const { store } = await fixture();
      const first = await running(store, [text('a'), text('b'), text('c')]);
      const second = await running(store, [text('d'), text('e')]);
      const claims = await Promise.all(Array.from({ length: 8 }, () => store.claim(NOW)));
      const claimed = claims.filter(isClaim).map((c) => `${c.batchId}:${c.index}`);
      expect(claimed.sort()).toEqual([`${first}:0`, `${first}:1`, `${first}:2`, `${second}:0`, `${second}:1`].sort());
      expect(await store.claim(NOW)).toEqual({ waitMs: null });
      expect(await store.activity(first)).toEqual({ pending: false, running: true });
      expect(await store.counts(first)).toMatchObject({ running: 3, pending: 0 });
    });

    it('claims in order when one at a time, and a deferred line waits for its time', async () => {
      const { store } = await fixture();
      const id = await running(store, [text('a'), text('b')]);
      expect(await store.claim(NOW)).toEqual({ batchId: id, index: 0 });
      await store.defer(id, 0, NOW + 5000);
      expect(await store.claim(NOW)).toEqual({ batchId: id, index: 1 });
      expect(await store.claim(NOW)).toEqual({ waitMs: 5000 });
      expect(await store.claim(NOW + 5000)).toEqual({ batchId: id, index: 0 });
    });

    it('records outcomes, counts them, and lists done lines in file order', async () => {
      const { store } = await fixture();
      const id = await running(store, [text('a'), text('b'), text('c')]);
      for (let i = 0; i < 3; i++) await store.claim(NOW);
      await store.settle(id, 2, { kind: 'answered', statusCode: 200, requestId: 'req_2', body: '{"ok":true}' });
      await store.settle(id, 0, { kind: 'answered', statusCode: 429, requestId: 'req_0', body: '{}' });
      expect(await store.activity(id)).toEqual({ pending: false, running: true });
      await store.settle(id, 1, { kind: 'error', code: 'internal_error', message: 'boom' });
      expect(await store.activity(id)).toEqual({ pending: false, running: false });
      expect(await store.counts(id)).toEqual({ total: 3, completed: 1, failed: 2, pending: 0, running: 0 });
      const done = await store.doneLines(id);
      expect(done.map((l) => [l.idx, l.status_code, l.error_code])).toEqual([
        [0, 429, null],
        [1, null, 'internal_error'],
        [2, 200, null],
      ]);
      expect(done[2]).toMatchObject({ request_id: 'req_2', response: '{"ok":true}' });
    });

    it('fails lines running for an instance that is gone, never a live one', async () => {
      const { store, unregister } = await fixture();
      const id = await running(store, [text('a'), text('b')]);
      await store.claim(NOW);
      expect(await store.interruptRunning('stopped')).toBe(0);
      await unregister();
      expect(await store.interruptRunning('stopped')).toBe(1);
      expect(await store.line(id, 0)).toMatchObject({ state: 'done', error_code: 'interrupted', error_message: 'stopped' });
      expect(await store.line(id, 1)).toMatchObject({ state: 'pending' });
    });

    it('moves a batch only from the states given, with its files and its event in the same change', async () => {
      const { store, events } = await fixture();
      const id = await running(store, [text('a')]);
      await store.claim(NOW);
      await store.settle(id, 0, { kind: 'answered', statusCode: 200, requestId: 'r', body: '{}' });
      expect(await store.move(id, ['validating'], 'finalizing', NOW)).toBe(false);
      expect(await store.move(id, ['in_progress'], 'finalizing', NOW + 1)).toBe(true);
      expect(await store.move(id, ['in_progress'], 'finalizing', NOW + 2)).toBe(false);
      const seen: unknown[] = [];
      const extras = {
        files: { output: 'file-out', error: null },
        event: (row: BatchRow, counts: { total: number; completed: number; failed: number }) => {
          seen.push({ status: row.status, output: row.output_file_id, counts: { total: counts.total, completed: counts.completed, failed: counts.failed } });
          return { type: 'batch.completed' as const, data: { id: row.id } };
        },
      };
      expect(await store.move(id, ['finalizing'], 'completed', NOW + 3, extras)).toBe(true);
      expect(seen).toEqual([{ status: 'completed', output: 'file-out', counts: { total: 1, completed: 1, failed: 0 } }]);
      expect(await store.get(id)).toMatchObject({ status: 'completed', finalizing_at: NOW + 1, completed_at: NOW + 3, output_file_id: 'file-out', error_file_id: null });
      // A second finalizer loses: nothing is attached, nothing emitted.
      expect(await store.move(id, ['finalizing'], 'completed', NOW + 4, { ...extras, files: { output: 'file-late', error: null } })).toBe(false);
      expect((await store.get(id))?.output_file_id).toBe('file-out');
      expect(await events()).toEqual(['batch.completed']);
    });

    it('claims nothing from a batch past its window, and expiry fails its pending lines', async () => {
      const { store } = await fixture();
      const id = await running(store, [text('a'), text('b')], newBatch('proj_a', 1000));
      expect(await store.claim(NOW)).toEqual({ batchId: id, index: 0 });
      expect(await store.claim(NOW + 1000)).toEqual({ waitMs: null });
      expect(await store.expirePending(id, 'expired')).toBe(1);
      expect(await store.line(id, 1)).toMatchObject({ state: 'done', error_code: 'batch_expired', error_message: 'expired' });
      expect(await store.line(id, 0)).toMatchObject({ state: 'running' });
    });
  });
}
