/**
 * Bench only: workers/similarity.ts wrapped so each task also reports when it started and how long it
 * ran, in the thread's clock (performance.timeOrigin + now(), comparable across threads). Splits a slow
 * round trip into late start, long compute and late return.
 */
import type { SimilarityTask } from '../src/pool/tasks.js';
import similarity from '../workers/similarity.js';

export interface Timed {
  readonly startedAt: number;
  readonly computeMs: number;
}

export default function timedSimilarity(task: SimilarityTask): Timed {
  const t0 = performance.now();
  similarity(task);
  return { startedAt: performance.timeOrigin + t0, computeMs: performance.now() - t0 };
}
