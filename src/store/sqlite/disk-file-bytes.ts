/**
 * The SQLite backend's file bytes (files/file-bytes.ts): on this instance's disk, under `dir` (the store's
 * `files/` folder, store-path.ts), the rows in SQLite (files/files-store.ts).
 *
 * Layout of `dir`: `<file-id>` (a file's bytes), `parts/<part-id>` (an upload's parts until it completes or
 * is cancelled), `tmp/` (bytes being written). A write goes to `tmp/`, is fsynced, renamed to its final
 * name, and only then is the row inserted: a crash mid-upload leaves at most a temp file (cleared at start)
 * or, between rename and insert, bytes without a row (swept at start too, files-sweep.ts), never a row
 * without bytes. A staged blob's `ref` is its temp file's path. A file is read from its path, valid until
 * the file is deleted (a reader that has the file open keeps its bytes even across a delete, POSIX semantics).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FilesRefusal, type StagedBytes } from '../../core/store/files-store.js';
import type { Db } from '../db.js';
import type { BytesOwner, FileBytes, PlacedBytes } from '../files/file-bytes.js';
import { sweepLeftovers } from '../files-sweep.js';
import type { SqlProgram } from '../sql/sql-program.js';

const WRITE_HIGH_WATER_MARK = 1024 * 1024;
const READ_HIGH_WATER_MARK = 256 * 1024;

/** Nothing to do inside a row's transaction: on disk the bytes are in place before it, and go after it. */
function* nothing(): SqlProgram<void> {}

/** Sweeps what a crash left in `dir` (files-sweep.ts), synchronously, before the store serves. */
export function createDiskFileBytes(db: Db, dir: string): FileBytes {
  const tmpDir = join(dir, 'tmp');
  const partsDir = join(dir, 'parts');
  mkdirSync(tmpDir, { recursive: true });
  mkdirSync(partsDir, { recursive: true });
  sweepLeftovers(db, dir, tmpDir, partsDir);
  const pathOf = (owner: BytesOwner, id: string): string => (owner === 'file' ? join(dir, id) : join(partsDir, id));

  async function place(tempPath: string, finalPath: string): Promise<PlacedBytes> {
    await rename(tempPath, finalPath);
    await fsyncPath(dir);
    return { blobId: undefined, claim: nothing, release: async () => rmSync(finalPath, { force: true }) };
  }

  return {
    stage: (source, maxBytes) => writeTemp(tmpDir, source, maxBytes),
    discard: async (staged) => rmSync(staged.ref, { force: true }),
    place: (staged, owner, id) => place(staged.ref, pathOf(owner, id)),
    async join(parts) {
      const temp = await writeTemp(tmpDir, Readable.from(concatParts(parts.map((p) => join(partsDir, p.id)))), Number.MAX_SAFE_INTEGER);
      return {
        bytes: temp.bytes,
        md5: async () => temp.md5,
        discard: async () => rmSync(temp.ref, { force: true }),
        place: (fileId) => place(temp.ref, join(dir, fileId)),
      };
    },
    read: (file) => createReadStream(join(dir, file.id), { highWaterMark: READ_HIGH_WATER_MARK }),
    dropWith: nothing,
    dropAfter: async (owner, rows) => void (await Promise.all(rows.map((row) => rm(pathOf(owner, row.id), { force: true })))),
    // Leftovers were swept when the store opened; another gateway on the same folder may be writing now.
    sweep: async () => undefined,
  };
}

/** Streams `source` to a temp file (fsynced). Rejects with FilesRefusal('too_large') past `maxBytes`, keeping nothing. */
async function writeTemp(tmpDir: string, source: Readable, maxBytes: number): Promise<StagedBytes> {
  const path = join(tmpDir, randomBytes(12).toString('hex'));
  let bytes = 0;
  const md5 = createHash('md5');
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new FilesRefusal('too_large', `The file exceeds the ${maxBytes}-byte limit.`));
      md5.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(source, counter, createWriteStream(path, { flags: 'wx', highWaterMark: WRITE_HIGH_WATER_MARK }));
    await fsyncPath(path);
  } catch (err) {
    await rm(path, { force: true });
    throw err;
  }
  return { ref: path, bytes, md5: md5.digest('hex') };
}

/** The parts' bytes, one after another, read with backpressure. */
async function* concatParts(paths: readonly string[]): AsyncGenerator<Buffer> {
  for (const path of paths) {
    for await (const chunk of createReadStream(path, { highWaterMark: WRITE_HIGH_WATER_MARK })) yield chunk as Buffer;
  }
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
