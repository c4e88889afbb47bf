/**
 * The files storage port (src/core/store/files-store.ts): one suite, run against SQLite (bytes on disk) and
 * PostgreSQL (bytes in chunk rows) by files-store.test.ts. Projects `proj_a` and `proj_b` exist; `events()`
 * lists the `file.*` events the store emitted, oldest first.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterEach, describe, expect, it } from 'vitest';
import { UPLOAD_TTL_MS } from '../../src/core/files/file-objects.js';
import { FilesRefusal, type FilesStore } from '../../src/core/store/files-store.js';

export interface FilesStoreFixture {
  readonly store: FilesStore;
  events(): Promise<string[]>;
  close(): Promise<void>;
}

/** The store's clock: the suite moves it past an upload's expiry. */
export interface TestClock {
  now: number;
}

const MiB = 1024 * 1024;
const NOW = 1_700_000_000_000;

/** Several source chunks of odd sizes, so chunk boundaries in the store fall mid-chunk. */
const source = (bytes: Buffer): Readable => {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 300_001) pieces.push(bytes.subarray(at, at + 300_001));
  return Readable.from(pieces);
};
const md5 = (bytes: Buffer): string => createHash('md5').update(bytes).digest('hex');

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof FilesRefusal)) throw new Error(`expected a FilesRefusal, got ${String(err)}`);
  return err.reason;
}

export function filesStoreContract(name: string, open: (clock: TestClock) => Promise<FilesStoreFixture>): void {
  describe(`files store: ${name}`, () => {
    const opened: FilesStoreFixture[] = [];
    const clock: TestClock = { now: NOW };
    const fixture = async (): Promise<FilesStoreFixture> => {
      clock.now = NOW;
      const f = await open(clock);
      opened.push(f);
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    it('commits staged bytes as a file whose content reads back byte-exact, in its project only, with file.uploaded', async () => {
      const { store, events } = await fixture();
      const bytes = randomBytes(2.5 * MiB);
      const staged = await store.stage(source(bytes), 3 * MiB);
      expect({ bytes: staged.bytes, md5: staged.md5 }).toEqual({ bytes: bytes.length, md5: md5(bytes) });
      const meta = await store.commit('proj_a', staged, 'big.bin', 'batch');
      expect(meta).toMatchObject({ projectId: 'proj_a', filename: 'big.bin', purpose: 'batch', bytes: bytes.length, createdAt: NOW });
      expect(await store.get('proj_a', meta.id)).toEqual(meta);
      const got = await store.open('proj_a', meta.id);
      expect(got?.meta).toEqual(meta);
      expect(md5(await buffer(got!.content))).toBe(md5(bytes));
      expect(await store.get('proj_b', meta.id)).toBeNull();
      expect(await store.open('proj_b', meta.id)).toBeNull();
      expect(await events()).toEqual(['file.uploaded']);
    });

    it('stores an empty file', async () => {
      const { store } = await fixture();
      const meta = await store.commit('proj_a', await store.stage(Readable.from([]), 10), 'empty.jsonl', 'batch');
      expect(meta.bytes).toBe(0);
      expect((await buffer((await store.open('proj_a', meta.id))!.content)).length).toBe(0);
    });

    it('refuses bytes past the cap with too_large, and a failed source, keeping no file', async () => {
      const { store, events } = await fixture();
      expect(await refusal(store.stage(source(randomBytes(MiB + 10)), MiB))).toBe('too_large');
      const broken = new Readable({ read() {} });
      const staging = store.stage(broken, MiB);
      broken.push(randomBytes(4096));
      broken.destroy(new Error('client went away'));
      await expect(staging).rejects.toThrow('client went away');
      expect(await store.list('proj_a', { limit: 10, order: 'desc' })).toEqual({ data: [], hasMore: false });
      expect(await events()).toEqual([]);
    });

    it('cannot commit staged bytes once discarded', async () => {
      const { store } = await fixture();
      const staged = await store.stage(Readable.from([Buffer.from('x')]), 10);
      await store.discard(staged);
      await expect(store.commit('proj_a', staged, 'x.txt', 'batch')).rejects.toThrow();
      expect((await store.list('proj_a', { limit: 10, order: 'desc' }))?.data).toEqual([]);
    });

    it('lists a project newest or oldest first, by purpose, in pages after a cursor', async () => {
      const { store } = await fixture();
      const put = async (projectId: string, filename: string, purpose: string) =>
        store.commit(projectId, await store.stage(Readable.from([Buffer.from(filename)]), 100), filename, purpose);
      const a = await put('proj_a', 'a', 'batch');
      const b = await put('proj_a', 'b', 'user_data');
      const c = await put('proj_a', 'c', 'batch');
      await put('proj_b', 'd', 'batch');
      const ids = (page: { data: { id: string }[] } | null) => page?.data.map((f) => f.id);
      expect(ids(await store.list('proj_a', { limit: 10, order: 'desc' }))).toEqual([c.id, b.id, a.id]);
      expect(ids(await store.list('proj_a', { limit: 10, order: 'asc' }))).toEqual([a.id, b.id, c.id]);
      expect(ids(await store.list('proj_a', { limit: 10, order: 'desc', purpose: 'batch' }))).toEqual([c.id, a.id]);
      const first = await store.list('proj_a', { limit: 2, order: 'desc' });
      expect({ ids: ids(first), hasMore: first?.hasMore }).toEqual({ ids: [c.id, b.id], hasMore: true });
      const next = await store.list('proj_a', { limit: 2, order: 'desc', after: b.id });
      expect({ ids: ids(next), hasMore: next?.hasMore }).toEqual({ ids: [a.id], hasMore: false });
      expect(await store.list('proj_a', { limit: 2, order: 'desc', after: 'file-nope' })).toBeNull();
    });

    it('deletes a file of its project once, with file.deleted', async () => {
      const { store, events } = await fixture();
      const meta = await store.commit('proj_a', await store.stage(Readable.from([Buffer.from('bye')]), 10), 'x.txt', 'batch');
      expect(await store.delete('proj_b', meta.id)).toBe(false);
      expect(await store.delete('proj_a', meta.id)).toBe(true);
      expect(await store.get('proj_a', meta.id)).toBeNull();
      expect(await store.open('proj_a', meta.id)).toBeNull();
      expect(await store.delete('proj_a', meta.id)).toBe(false);
      expect(await events()).toEqual(['file.uploaded', 'file.deleted']);
    });

    it('completes an upload from its parts in the order given, checking the MD5', async () => {
      const { store, events } = await fixture();
      const one = randomBytes(1.5 * MiB);
      const two = randomBytes(0.7 * MiB);
      const upload = await store.createUpload('proj_a', { filename: 'big.jsonl', purpose: 'batch', bytes: one.length + two.length, mimeType: 'text/jsonl' });
      expect(await store.getUpload('proj_a', upload.id)).toEqual(upload);
      expect(await store.getUpload('proj_b', upload.id)).toBeNull();
      const p1 = await store.addPart('proj_a', upload, await store.stage(source(one), 2 * MiB));
      const p2 = await store.addPart('proj_a', upload, await store.stage(source(two), 2 * MiB));
      const whole = Buffer.concat([two, one]);
      const done = await store.complete('proj_a', upload, [p2.id, p1.id], md5(whole).toUpperCase());
      expect(done.upload).toMatchObject({ status: 'completed', fileId: done.file.id });
      expect(done.file).toMatchObject({ filename: 'big.jsonl', purpose: 'batch', bytes: whole.length });
      expect(md5(await buffer((await store.open('proj_a', done.file.id))!.content))).toBe(md5(whole));
      expect(await store.getUpload('proj_a', upload.id)).toMatchObject({ status: 'completed', fileId: done.file.id });
      expect(await refusal(store.addPart('proj_a', upload, await store.stage(source(two), 2 * MiB)))).toBe('not_pending');
      expect(await refusal(store.complete('proj_a', (await store.getUpload('proj_a', upload.id))!, [p2.id, p1.id], undefined))).toBe('not_pending');
      expect(await events()).toEqual(['file.uploaded']);
    });

    it('refuses a completion naming a part twice, a foreign part, the wrong byte count or the wrong MD5, and completes after', async () => {
      const { store } = await fixture();
      const upload = await store.createUpload('proj_a', { filename: 'x.jsonl', purpose: 'batch', bytes: 6, mimeType: 'text/jsonl' });
      const other = await store.createUpload('proj_a', { filename: 'y.jsonl', purpose: 'batch', bytes: 3, mimeType: 'text/jsonl' });
      const a = await store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('abc')]), 10));
      const b = await store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('def')]), 10));
      const foreign = await store.addPart('proj_a', other, await store.stage(Readable.from([Buffer.from('ghi')]), 10));
      expect(await refusal(store.complete('proj_a', upload, [a.id, a.id], undefined))).toBe('bad_parts');
      expect(await refusal(store.complete('proj_a', upload, [a.id, foreign.id], undefined))).toBe('bad_parts');
      expect(await refusal(store.complete('proj_a', upload, [a.id], undefined))).toBe('byte_mismatch');
      expect(await refusal(store.complete('proj_a', upload, [a.id, b.id], md5(Buffer.from('nope'))))).toBe('md5_mismatch');
      const done = await store.complete('proj_a', upload, [a.id, b.id], md5(Buffer.from('abcdef')));
      expect((await buffer((await store.open('proj_a', done.file.id))!.content)).toString()).toBe('abcdef');
    });

    it('cancels a pending upload once; its parts and completion are refused after', async () => {
      const { store } = await fixture();
      const upload = await store.createUpload('proj_a', { filename: 'x.jsonl', purpose: 'batch', bytes: 3, mimeType: 'text/jsonl' });
      const part = await store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('abc')]), 10));
      expect(await store.cancel('proj_a', upload)).toMatchObject({ status: 'cancelled' });
      expect(await store.getUpload('proj_a', upload.id)).toMatchObject({ status: 'cancelled' });
      expect(await refusal(store.cancel('proj_a', upload))).toBe('not_pending');
      expect(await refusal(store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('d')]), 10)))).toBe('not_pending');
      expect(await refusal(store.complete('proj_a', (await store.getUpload('proj_a', upload.id))!, [part.id], undefined))).toBe('not_pending');
    });

    it('expires pending uploads past their hour, refusing their parts', async () => {
      const { store } = await fixture();
      const upload = await store.createUpload('proj_a', { filename: 'x.jsonl', purpose: 'batch', bytes: 3, mimeType: 'text/jsonl' });
      await store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('abc')]), 10));
      expect(await store.sweepExpired()).toBe(0);
      clock.now = NOW + UPLOAD_TTL_MS;
      expect(await refusal(store.addPart('proj_a', upload, await store.stage(Readable.from([Buffer.from('d')]), 10)))).toBe('not_pending');
      expect(await store.sweepExpired()).toBe(1);
      expect(await store.getUpload('proj_a', upload.id)).toMatchObject({ status: 'expired' });
      expect(await store.sweepExpired()).toBe(0);
    });
  });
}
