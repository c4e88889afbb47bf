/**
 * The piscina pool. Workers load their heavy state once (tiktoken's encoder takes ~120 ms) and serve
 * tasks as pure functions. `ready` turns true once a worker answered a first task, which /readyz reports.
 *
 * Closing never terminates a thread that is running a task: a worker terminated inside a native
 * Node-API call (hnswlib-node's addPoint, during an index build) makes node-addon-api raise a fatal
 * error, and the whole process ends with SIGABRT (reproduced: "FATAL ERROR:
 * Error::ThrowAsJavaScriptException napi_throw"). So close() tells builds to give up at their next point
 * (the shared `cancel` cell: a build queued or running fails within one addPoint), waits for every task
 * it handed to piscina to settle, and only then ends the (idle) threads with destroy(). Not piscina's
 * close(): with two or more threads its wait counts a thread that finished a task more than once and can
 * resolve while another thread still runs one, then destroy() terminates that thread mid-task.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { settlesWithin } from './settles-within.js';
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

/** How long close() waits for running tasks before terminating threads anyway (builds stop within ms). */
export const CLOSE_WAIT_MS = 5_000;

export function createWorkerPool(options: { minThreads: number; maxThreads: number; closeWaitMs?: number }): WorkerPool {
  const piscina = new Piscina({
    filename: workerFile('tokens'),
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 60_000,
  });
  /** One shared cell: non-zero once closing (read by workers/similarity.ts between the points of a build). */
  const cancel = new Int32Array(new SharedArrayBuffer(4));
  let closing: Promise<void> | null = null;
  /** Every task handed to piscina and not settled yet (queued or running). */
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(task: Promise<T>): Promise<T> => {
    inFlight.add(task);
    const settled = (): void => void inFlight.delete(task);
    task.then(settled, settled);
    return task;
  };
  let ready = false;
  // piscina has no public readiness event: a real task through a real worker is the proof.
  const warmUp = track(piscina.run({ texts: ['ready'] }) as Promise<CountTokensOutput>).then(() => {
    ready = true;
  });
  // A pool closed before its first answer fails the warm-up; whoever awaits whenReady() sees it.
  warmUp.catch(() => undefined);

  return {
    countTokens: (input, signal) =>
      track(piscina.run(input, { filename: workerFile('tokens'), ...(signal ? { signal } : {}) }) as Promise<CountTokensOutput>),
    sign: (input) => track(piscina.run(input, { filename: workerFile('sign') }) as Promise<SignOutput>),
    buildIndex: (input) =>
      track(piscina.run({ ...input, cancel }, { filename: workerFile('similarity'), transferList: [input.vectors.buffer] }) as Promise<BuildIndexOutput>),
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
    close() {
      closing ??= (async () => {
        Atomics.store(cancel, 0, 1);
        // Tokens and signatures take milliseconds, builds stop at their next point: the wait is short. The
        // bound is for a task that hangs; terminating it then may still abort the process.
        const settled = (async () => {
          while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        })();
        await settlesWithin(settled, options.closeWaitMs ?? CLOSE_WAIT_MS);
        // Every thread is idle now (between tasks): terminating it interrupts no native call.
        await piscina.destroy();
      })();
      return closing;
    },
  };
}
