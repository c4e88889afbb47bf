/**
 * The similarity thread's entry (a plain worker_threads Worker, see similarity-pool.ts): each message is
 * one task for workers/similarity.ts, answered with its id. Search answers hand their typed arrays over
 * (transferred, not copied): the thread made them for this answer and keeps nothing of them.
 *
 * Small indexes are scanned exactly (exact-scan.ts): the pool scans them on the main thread, and this
 * thread too for one the pool sends here (its copy not of the version searched). Larger indexes go to the
 * graph.
 */
import { parentPort, workerData } from 'node:worker_threads';
import similarity from '../../workers/similarity.js';
import { scan, scannable, type Small } from './exact-scan.js';
import type { SearchIndexOutput, SimilarityReply, SimilarityRequest, SimilarityStop } from './tasks.js';

const small = new Map<string, Small>();
/** Set by the pool when it closes (similarity-pool.ts): tasks not yet started fail without native work. */
const cancel = (workerData as { cancel?: Int32Array } | null)?.cancel ?? new Int32Array(1);

function cancelled(): void {
  if (Atomics.load(cancel, 0) !== 0) throw new Error('the similarity thread is closed');
}

function run(task: SimilarityRequest['task']): ReturnType<typeof similarity> {
  cancelled();
  if (task.op === 'load') {
    // Copied before the load, which normalizes the vectors it keeps in place.
    const index = scannable(task);
    const out = similarity(task);
    if (index) small.set(task.key, index);
    else small.delete(task.key);
    return out;
  }
  return task.searches.map((s) => {
    cancelled();
    const index = small.get(s.key);
    return index && index.version === s.version && s.query.length === index.dimensions ? scan(index, s) : (similarity({ op: 'search', ...s }) as SearchIndexOutput);
  });
}

if (parentPort) {
  const port = parentPort;
  port.on('message', (message: SimilarityRequest | SimilarityStop) => {
    // The pool is closing: every task posted before this was answered; with the port closed the thread
    // has nothing left to run and ends on its own (see similarity-pool.ts close()).
    if ('stop' in message) {
      port.close();
      return;
    }
    const { id, task } = message;
    let reply: SimilarityReply;
    const transfer: ArrayBuffer[] = [];
    try {
      const value = run(task);
      if (Array.isArray(value)) {
        for (const out of value) if (out.found) transfer.push(out.endpoints.buffer as ArrayBuffer, out.scores.buffer as ArrayBuffer);
      }
      reply = { id, ok: true, value };
    } catch (err) {
      reply = { id, ok: false, message: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply, transfer);
  });
}
