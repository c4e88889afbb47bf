/**
 * The semantic router's dedicated similarity thread (a one-thread piscina running workers/similarity.ts).
 * One thread holds every loaded profile index, so each index exists once in memory and is loaded once;
 * builds run on the shared pool and reach this thread as files (see src/pool/tasks.ts). The thread never
 * idles out: its indexes would go with it.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { LoadIndexInput, LoadIndexOutput, SearchIndexInput, SearchIndexOutput } from './tasks.js';

export interface SimilarityPool {
  load(input: Omit<LoadIndexInput, 'op'>): Promise<LoadIndexOutput>;
  search(input: Omit<SearchIndexInput, 'op'>): Promise<SearchIndexOutput>;
  close(): Promise<void>;
}

export function createSimilarityPool(): SimilarityPool {
  const piscina = new Piscina({
    filename: fileURLToPath(new URL('../../workers/similarity.js', import.meta.url)),
    minThreads: 1,
    maxThreads: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
  });
  return {
    load: (input) => piscina.run({ op: 'load', ...input } satisfies LoadIndexInput, { transferList: [input.vectors.buffer] }) as Promise<LoadIndexOutput>,
    search: (input) => piscina.run({ op: 'search', ...input } satisfies SearchIndexInput, { transferList: [input.query.buffer] }) as Promise<SearchIndexOutput>,
    close: () => piscina.destroy(),
  };
}
