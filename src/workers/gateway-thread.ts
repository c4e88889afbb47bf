/**
 * The main thread's handle on one gateway worker (gateway-worker.ts): when it listens, when it ended
 * without being asked to, and a drain that resolves once the thread has exited.
 */
import type { Worker } from 'node:worker_threads';
import type { WorkerCommand, WorkerReport } from './worker-protocol.js';

/** A worker that could not start: the launch exits with `exitCode` (2: the operator's error, as in cli.ts). */
export class WorkerStartError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

export class GatewayThread {
  /** Resolves once the worker listens; rejects if it fails to start or exits first. */
  readonly listening: Promise<void>;
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #lastError: Error | null = null;
  #draining = false;

  /** `onExit`: an exit nobody asked for (no drain), after listening or not. */
  constructor(worker: Worker, onExit: (err: Error | null, exitCode: number) => void) {
    this.#worker = worker;
    let listened: () => void = () => undefined;
    let failed: (err: Error) => void = () => undefined;
    this.listening = new Promise<void>((resolve, reject) => {
      listened = resolve;
      failed = reject;
    });
    // A failure before listening is the launch's to report; never an unhandled rejection here.
    this.listening.catch(() => undefined);
    worker.on('message', (report: WorkerReport) => {
      if (report.kind === 'listening') listened();
      else if (report.kind === 'failed') {
        failed(new WorkerStartError(report.message, report.exitCode));
        // What startGateway opened before failing (store, pool threads) would keep the thread alive.
        void worker.terminate();
      }
    });
    worker.on('error', (err) => (this.#lastError = err));
    this.#exited = new Promise((resolve) => {
      worker.on('exit', (code) => {
        failed(this.#lastError ?? new WorkerStartError(`a worker exited (code ${code}) before listening`, 1));
        if (!this.#draining) onExit(this.#lastError, code);
        resolve();
      });
    });
  }

  /** Asks the worker to drain (server.drain_timeout_ms bounds its requests) and waits until it has exited. */
  drain(): Promise<void> {
    if (!this.#draining) {
      this.#draining = true;
      const command: WorkerCommand = { kind: 'drain' };
      try {
        this.#worker.postMessage(command);
      } catch {
        // already gone: its exit settles #exited
      }
    }
    return this.#exited;
  }
}
