/**
 * The piscina pool. Workers load their heavy state once (tiktoken's encoder takes ~120 ms) and serve
 * tasks as pure functions. `ready` turns true once a worker answered a first task, which /readyz reports.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { BuildIndexInput, BuildIndexOutput, CountTokensInput, CountTokensOutput, SignInput, SignOutput } from './tasks.js';

export interface WorkerPool {
  countTokens(input: CountTokensInput, signal?: AbortSignal): Promise<CountTokensOutput>;
  /** Webhook signatures for a batch of deliveries (workers/sign.ts). */
  sign(input: SignInput): Promise<SignOutput>;
  /** Builds a semantic-router profile index into a file (workers/similarity.ts); the vectors are transferred. */
  buildIndex(input: BuildIndexInput): Promise<BuildIndexOutput>;
  readonly ready: boolean;
  /** Resolves once a worker has loaded and answered a first task. */
  whenReady(): Promise<void>;
  readonly queueSize: number;
  readonly utilization: number;
  close(): Promise<void>;
}

/** dist/src/pool/worker-pool.js -> dist/workers/<task>.js */
function workerFile(name: string): string {
  return fileURLToPath(new URL(`../../workers/${name}.js`, import.meta.url));
}

export function createWorkerPool(options: { minThreads: number; maxThreads: number }): WorkerPool {
  const piscina = new Piscina({
    filename: workerFile('tokens'),
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 60_000,
  });
  let ready = false;
  // piscina has no public readiness event: a real task through a real worker is the proof.
  const warmUp = (piscina.run({ texts: ['ready'] }) as Promise<CountTokensOutput>).then(() => {
    ready = true;
  });

  return {
    countTokens: (input, signal) =>
      piscina.run(input, { filename: workerFile('tokens'), ...(signal ? { signal } : {}) }) as Promise<CountTokensOutput>,
    sign: (input) => piscina.run(input, { filename: workerFile('sign') }) as Promise<SignOutput>,
    buildIndex: (input) =>
      piscina.run(input, { filename: workerFile('similarity'), transferList: [input.vectors.buffer] }) as Promise<BuildIndexOutput>,
    get ready() {
      return ready;
    },
    whenReady: () => warmUp,
    get queueSize() {
      return piscina.queueSize;
    },
    get utilization() {
      return piscina.utilization;
    },
    close: () => piscina.destroy(),
  };
}
