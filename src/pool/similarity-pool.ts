/**
 * The semantic router's dedicated similarity thread (a one-thread piscina running workers/similarity.ts).
 * One thread holds every loaded profile index, so each index exists once in memory and is loaded once;
 * builds run on the shared pool and reach this thread as files (see src/pool/tasks.ts). The thread never
 * idles out: its indexes would go with it.
 *
 * Searches are batched: those made in one event-loop turn travel as one task. Under load piscina's own
 * bookkeeping per task (queueing, dispatch, response handling) cost more main-thread CPU than the rest of
 * the routing decision (measured with --cpu-prof, bench/RESULTS.md); alone, a search is a batch of one.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { LoadIndexInput, LoadIndexOutput, SearchBatchInput, SearchBatchOutput, SearchIndexInput, SearchIndexOutput } from './tasks.js';

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

export function createSimilarityPool(): SimilarityPool {
  const piscina = new Piscina({
    filename: fileURLToPath(new URL('../../workers/similarity.js', import.meta.url)),
    minThreads: 1,
    maxThreads: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
  });
  let batch: Pending[] = [];

  function flush(): void {
    const pending = batch;
    batch = [];
    const task: SearchBatchInput = { op: 'search-batch', searches: pending.map((p) => p.input) };
    (piscina.run(task, { transferList: pending.map((p) => p.input.query.buffer) }) as Promise<SearchBatchOutput>).then(
      (outputs) => pending.forEach((p, i) => p.resolve(outputs[i] ?? { found: false })),
      (err: unknown) => pending.forEach((p) => p.reject(err)),
    );
  }

  return {
    load: (input) => piscina.run({ op: 'load', ...input } satisfies LoadIndexInput, { transferList: [input.vectors.buffer] }) as Promise<LoadIndexOutput>,
    search: (input) =>
      new Promise<SearchIndexOutput>((resolve, reject) => {
        if (batch.length === 0) setImmediate(flush);
        batch.push({ input, resolve, reject });
      }),
    close: () => piscina.destroy(),
  };
}
