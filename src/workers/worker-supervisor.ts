/**
 * The main thread's supervision of the gateway workers of `serve --workers N`: start them all (one
 * failure drains the others and fails the launch), replace one that dies once the launch is up (its error
 * logged, the counters' lock freed if it held it), and give up, draining the rest, after MAX_DEATHS deaths
 * within DEATH_WINDOW_MS: a worker that cannot stay up is a bug to fix, not to loop on. stop() drains all.
 */
import type { Worker } from 'node:worker_threads';
import { flushLogger, type Logger } from '../log.js';
import { GatewayThread } from './gateway-thread.js';

/** Deaths that end the launch when they fall within DEATH_WINDOW_MS of each other. */
export const MAX_DEATHS = 5;
export const DEATH_WINDOW_MS = 60_000;

export class WorkerSupervisor {
  readonly #threads: (GatewayThread | null)[];
  readonly #spawn: (index: number) => Worker;
  readonly #freeLockOf: (index: number) => boolean;
  readonly #logger: Logger;
  readonly #onStopped: () => void;
  readonly #deaths: number[] = [];
  #stopping: Promise<void> | null = null;
  /** Every worker listened once: from then on a death is replaced (before, the launch fails). */
  #started = false;
  #launched: () => void = () => undefined;
  /** Resolves once every worker has listened; never if the launch fails. */
  readonly #launch = new Promise<void>((resolve) => (this.#launched = resolve));
  #giveUp: (code: number) => void = () => undefined;
  readonly gaveUp = new Promise<number>((resolve) => (this.#giveUp = resolve));

  /**
   * `spawn`: a gateway worker for an index (gateway-worker.ts); `freeLockOf`: frees the shared counters'
   * lock if that worker died holding it; `onStopped`: after every worker has exited (a temporary store removed).
   */
  constructor(count: number, spawn: (index: number) => Worker, freeLockOf: (index: number) => boolean, logger: Logger, onStopped: () => void) {
    this.#threads = Array.from({ length: count }, () => null);
    this.#spawn = spawn;
    this.#freeLockOf = freeLockOf;
    this.#logger = logger;
    this.#onStopped = onStopped;
  }

  async startAll(): Promise<void> {
    const starts = this.#threads.map((_, index) => this.#start(index));
    const outcomes = await Promise.allSettled(starts);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed === undefined) {
      this.#started = true;
      this.#launched();
      return;
    }
    await this.stop();
    throw failed.reason;
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await Promise.all(this.#threads.map((thread) => thread?.drain()));
      this.#onStopped();
      this.#logger.info('stopped');
      flushLogger(this.#logger);
    })();
    return this.#stopping;
  }

  async #start(index: number): Promise<void> {
    const worker = this.#spawn(index);
    const thread = new GatewayThread(worker, (err, code) => this.#died(index, thread, err, code));
    this.#threads[index] = thread;
    await thread.listening;
  }

  /**
   * An exit nobody asked for, once the launch is up (a replacement that fails to start included): log it,
   * free the counters' lock if it died holding it, replace it unless workers keep dying.
   */
  #died(index: number, thread: GatewayThread, err: Error | null, exitCode: number): void {
    // A worker that listened and then died while another was still starting is handled once the launch
    // is up (one that died before listening fails the launch, so the launch never comes up for it).
    if (!this.#started) {
      void this.#launch.then(() => this.#died(index, thread, err, exitCode));
      return;
    }
    if (this.#stopping !== null || this.#threads[index] !== thread) return;
    const freed = this.#freeLockOf(index);
    this.#logger.error({ worker: index, err, exit_code: exitCode, freed_counter_lock: freed || undefined }, 'worker died');
    const now = Date.now();
    this.#deaths.push(now);
    while ((this.#deaths[0] ?? now) < now - DEATH_WINDOW_MS) this.#deaths.shift();
    if (this.#deaths.length >= MAX_DEATHS) {
      this.#logger.fatal({ deaths: this.#deaths.length, window_ms: DEATH_WINDOW_MS }, 'workers keep dying; stopping');
      void this.stop().then(() => this.#giveUp(1));
      return;
    }
    // A replacement that fails to start exits, which comes back here as a death.
    this.#start(index).then(
      () => this.#logger.info({ worker: index }, 'worker replaced'),
      () => undefined,
    );
  }
}
