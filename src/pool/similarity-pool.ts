/**
 * The semantic router's dedicated similarity thread (a plain worker_threads Worker running
 * similarity-thread.ts around workers/similarity.ts). One thread holds every loaded profile index, so each
 * index exists once in memory and is loaded once; builds run on the shared pool and reach this thread as
 * files (see src/pool/tasks.ts). The thread never idles out: its indexes would go with it.
 *
 * Not piscina: with one thread and no queue policy to choose, piscina's per-task bookkeeping (task info,
 * async resource, Atomics wake-up, the answer copied back) doubled the CPU of a round trip, measured with
 * the gateway's threads on one core (about 100 us against 50 us; bench/RESULTS.md, routing). Queries go in
 * transferred and answers come back transferred: a round trip copies no vector.
 *
 * Searches of a small index (exact-scan.ts) do not travel at all: the pool keeps a copy and scans it on
 * the main thread, since the hop costs more than the scan (a routed turn's gateway CPU, bench/routing.ts:
 * the round trip to the thread was the largest single cost of the routed path). Other searches are
 * batched: those made in one event-loop turn travel as one message; alone, a search is a batch of one. The thread starts with the pool. A thread that dies (it should not) fails its pending
 * tasks; the next task starts a new one, which holds no index, so the next search answers `found: false` and the caller reloads.
 */
import { Worker } from 'node:worker_threads';
import { scan, scannable, type Small } from './exact-scan.js';
import { settlesWithin } from './settles-within.js';
import type {
  LoadIndexInput,
  LoadIndexOutput,
  SearchBatchInput,
  SearchBatchOutput,
  SearchIndexInput,
  SearchIndexOutput,
  SimilarityReply,
  SimilarityRequest,
  SimilarityStop,
} from './tasks.js';

/**
 * How long close() lets the thread finish the tasks it holds and end on its own before terminating it.
 * Terminating it inside hnswlib-node's native code (a load or a search) aborts the process (SIGABRT), so
 * this is a last resort for a thread that hangs; its tasks take milliseconds.
 */
export const STOP_WAIT_MS = 5_000;

export interface SimilarityPool {
  load(input: Omit<LoadIndexInput, 'op'>): Promise<LoadIndexOutput>;
  search(input: Omit<SearchIndexInput, 'op'>): Promise<SearchIndexOutput>;
  close(): Promise<void>;
}

interface Pending {
  readonly input: Omit<SearchIndexInput, 'op'>;
  resolve(output: SearchIndexOutput): void;
  reject(err: unknown): void;
}

interface Waiter {
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** Settles the task a reply answers. */
function settleReply(waiting: Map<number, Waiter>, w: Worker, reply: SimilarityReply): void {
  const waiter = waiting.get(reply.id);
  waiting.delete(reply.id);
  // Held only while an answer is awaited: an idle thread does not keep the process alive.
  if (waiting.size === 0) w.unref();
  if (!waiter) return;
  if (reply.ok) waiter.resolve(reply.value);
  else waiter.reject(new Error(reply.message));
}

function failAll(waiting: Map<number, Waiter>, err: Error): void {
  for (const w of waiting.values()) w.reject(err);
  waiting.clear();
}

export function createSimilarityPool(options: { stopWaitMs?: number } = {}): SimilarityPool {
  let worker: Worker | null = null;
  let closed = false;
  /**
   * Shared with the thread: non-zero once closing. The thread then fails the tasks it has not started
   * (between searches, before any native call), so a backlog does not hold up the stop.
   */
  const cancel = new Int32Array(new SharedArrayBuffer(4));
  let ids = 0;
  const waiting = new Map<number, Waiter>();
  let batch: Pending[] = [];
  /** Small indexes as loaded into the thread, scanned here (by key; a search names the version it expects). */
  const small = new Map<string, Small>();

  function thread(): Worker {
    if (worker) return worker;
    const w = new Worker(new URL('./similarity-thread.js', import.meta.url), { workerData: { cancel } });
    w.on('message', (reply: SimilarityReply) => settleReply(waiting, w, reply));
    w.on('error', (err) => failAll(waiting, err));
    w.on('exit', (code) => {
      if (worker === w) worker = null;
      failAll(waiting, new Error(`the similarity thread exited (${code})`));
    });
    w.unref();
    worker = w;
    return w;
  }
  // Started now, as the first index load should not wait for a thread to boot.
  thread();

  function run<T>(task: SimilarityRequest['task'], transfer: ArrayBuffer[]): Promise<T> {
    if (closed) return Promise.reject(new Error('the similarity thread is closed'));
    const w = thread();
    ids += 1;
    const id = ids;
    return new Promise<T>((resolve, reject) => {
      if (waiting.size === 0) w.ref();
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      w.postMessage({ id, task } satisfies SimilarityRequest, transfer);
    });
  }

  function flush(): void {
    const pending = batch;
    batch = [];
    const task: SearchBatchInput = { op: 'search-batch', searches: pending.map((p) => p.input) };
    run<SearchBatchOutput>(task, pending.map((p) => p.input.query.buffer)).then(
      (outputs) => pending.forEach((p, i) => p.resolve(outputs[i] ?? { found: false })),
      (err: unknown) => pending.forEach((p) => p.reject(err)),
    );
  }

  return {
    load(input) {
      // Copied before the vectors are handed over to the thread.
      const exact = scannable({ op: 'load', ...input });
      return run<LoadIndexOutput>({ op: 'load', ...input }, [input.vectors.buffer]).then((out) => {
        if (exact) small.set(input.key, exact);
        else small.delete(input.key);
        return out;
      });
    },
    search(input) {
      const index = small.get(input.key);
      if (index && index.version === input.version && input.query.length === index.dimensions) return Promise.resolve(scan(index, input));
      return new Promise<SearchIndexOutput>((resolve, reject) => {
        if (batch.length === 0) setImmediate(flush);
        batch.push({ input, resolve, reject });
      });
    },
    async close() {
      closed = true;
      small.clear();
      const w = worker;
      worker = null;
      if (w) {
        // The stop comes after every task already posted: the thread fails them (cancel is set; the one
        // search it is in finishes), closes its port and ends by itself, never terminated in the middle
        // of a native call.
        Atomics.store(cancel, 0, 1);
        const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
        w.ref();
        w.postMessage({ stop: true } satisfies SimilarityStop);
        if (!(await settlesWithin(exited, options.stopWaitMs ?? STOP_WAIT_MS))) await w.terminate();
      }
      failAll(waiting, new Error('the similarity thread is closed'));
    },
  };
}
