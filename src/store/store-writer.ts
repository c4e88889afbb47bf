/**
 * The handle on the store's writer thread (store-writer-thread.ts), shared by the usage ledger and the
 * routing decision log. Each of them opens it and closes it when its own queue is stored; the thread
 * stops with the last close.
 */
import { Worker } from 'node:worker_threads';
import type { StoreWriterData, StoreWriterMessage, StoreWriterReply } from './store-writer-thread.js';

export interface StoreWriter {
  post(message: StoreWriterMessage, transfer?: ArrayBuffer[]): void;
  onReply(listener: (reply: StoreWriterReply) => void): void;
  onError(listener: (err: Error) => void): void;
  /** One user fewer; the thread is stopped when none is left. */
  release(): Promise<void>;
}

/** `users`: how many logs share the thread (each calls release() once). */
export function createStoreWriter(data: StoreWriterData, users: number): StoreWriter {
  const worker = new Worker(new URL('./store-writer-thread.js', import.meta.url), { workerData: data });
  worker.unref();
  let left = users;
  let stopped: Promise<void> | null = null;
  const stop = async (): Promise<void> => {
    const closed = new Promise<void>((resolve) => worker.on('message', (r: StoreWriterReply) => r.kind === 'closed' && resolve()));
    worker.postMessage({ kind: 'close' } satisfies StoreWriterMessage);
    await closed;
    await worker.terminate();
  };
  return {
    post: (message, transfer = []) => worker.postMessage(message, transfer),
    onReply: (listener) => void worker.on('message', listener),
    onError: (listener) => void worker.on('error', listener),
    release() {
      left -= 1;
      if (left > 0) return Promise.resolve();
      stopped ??= stop();
      return stopped;
    },
  };
}
