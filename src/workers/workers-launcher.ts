/**
 * `serve --workers N` (issue 12): N gateways in worker threads of this process, all listening on one port
 * (uWS sets SO_REUSEPORT, so the kernel spreads new connections over the listeners). The main thread
 * serves no request. It:
 *   - takes the config as loaded once (workers get it as data), resolves the store and migrates it once,
 *     so N workers never race to migrate; a `:memory:` store becomes one temporary file for all of them;
 *   - picks the port when asked for port 0 (free-port.ts), creates the shared counters' buffer and the
 *     bus's channel name (coordination.ts), starts the workers and waits until every one listens: if one
 *     fails, the others are drained and the launch fails with its error;
 *   - logs one "switchboard listening" line with `workers: N`;
 *   - replaces a worker that dies (its error logged), and gives up, draining the rest, after
 *     MAX_DEATHS deaths within DEATH_WINDOW_MS: a worker that cannot stay up is a bug to fix, not to loop on;
 *   - drains every worker on stop() (SIGTERM/SIGINT through cli.ts).
 */
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { broadcastChannelName } from '../coordination/broadcast-bus.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../coordination/shared-memory/shared-counter-table.js';
import { flushLogger, type Logger } from '../log.js';
import { openDatabase } from '../store/db.js';
import { resolveStorePath, type StorePath } from '../store/store-path.js';
import { freePort } from './free-port.js';
import { GatewayThread } from './gateway-thread.js';
export { WorkerStartError } from './gateway-thread.js';
import type { GatewayWorkerData } from './worker-protocol.js';

/** Deaths that end the launch when they fall within DEATH_WINDOW_MS of each other. */
export const MAX_DEATHS = 5;
export const DEATH_WINDOW_MS = 60_000;
/** Counters the shared table holds at least: ~38 MiB of address space, committed only as used. */
const MIN_COUNTER_CAPACITY = 4096;

export interface WorkersOptions {
  readonly config: Config;
  readonly workers: number;
  readonly host?: string | undefined;
  readonly port?: number | undefined;
  readonly dbPath?: string | undefined;
  readonly logger: Logger;
}

export interface RunningWorkers {
  readonly url: string;
  /** Drains every worker (each within server.drain_timeout_ms) and removes a temporary store. */
  stop(): Promise<void>;
  /** Settles with the exit code if the launch gives up on its own (too many deaths); never otherwise. */
  readonly gaveUp: Promise<number>;
}

/**
 * Room for every configured project's five counters and every configured key's quota, four times over
 * (keys created through the API, quota windows changed), and never less than MIN_COUNTER_CAPACITY.
 */
export function counterCapacityFor(config: Config): number {
  const configured = config.projects.reduce((n, p) => n + 5 + p.keys.length, 0);
  return Math.max(MIN_COUNTER_CAPACITY, 4 * configured);
}

export async function startWorkers(options: WorkersOptions): Promise<RunningWorkers> {
  const { config, logger } = options;
  const host = options.host ?? config.server.host;
  const requested = options.port ?? config.server.port;
  const port = requested === 0 ? await freePort(host) : requested;
  const store = resolveStorePath(options.dbPath ?? config.storage.path);
  // Migrations run here once; each worker's openDatabase then finds the schema current.
  openDatabase(store.path).close();
  const capacity = counterCapacityFor(config);
  const counters = createSharedCounterBuffer(capacity);
  const channel = broadcastChannelName(randomUUID());
  const dataFor = (workerIndex: number): GatewayWorkerData => ({ config, host, port, dbPath: store.path, shared: { counters, channel, workerIndex } });
  // The main thread's handle on the counters' mutex: a dead worker's lock is freed with it.
  const mutex = new SharedCounterTable(counters, { tag: options.workers + 1 }).lock;
  const supervisor = new Supervisor(options.workers, dataFor, (index) => mutex.releaseIfHeldBy(index + 1), logger, store);
  await supervisor.startAll();
  const scheme = config.server.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, workers: options.workers, region: config.server.region, production: config.server.production, shared_counters: capacity }, 'switchboard listening');
  return { url, stop: () => supervisor.stop(), gaveUp: supervisor.gaveUp };
}

class Supervisor {
  readonly #threads: (GatewayThread | null)[];
  readonly #dataFor: (index: number) => GatewayWorkerData;
  readonly #freeLockOf: (index: number) => boolean;
  readonly #logger: Logger;
  readonly #store: StorePath;
  readonly #deaths: number[] = [];
  #stopping: Promise<void> | null = null;
  /** Every worker listened once: from then on a death is replaced (before, the launch fails). */
  #started = false;
  #giveUp: (code: number) => void = () => undefined;
  readonly gaveUp = new Promise<number>((resolve) => (this.#giveUp = resolve));

  constructor(count: number, dataFor: (index: number) => GatewayWorkerData, freeLockOf: (index: number) => boolean, logger: Logger, store: StorePath) {
    this.#threads = Array.from({ length: count }, () => null);
    this.#dataFor = dataFor;
    this.#freeLockOf = freeLockOf;
    this.#logger = logger;
    this.#store = store;
  }

  async startAll(): Promise<void> {
    const starts = this.#threads.map((_, index) => this.#start(index));
    const outcomes = await Promise.allSettled(starts);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed === undefined) {
      this.#started = true;
      return;
    }
    await this.stop();
    throw failed.reason;
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await Promise.all(this.#threads.map((thread) => thread?.drain()));
      this.#store.discard();
      this.#logger.info('stopped');
      flushLogger(this.#logger);
    })();
    return this.#stopping;
  }

  async #start(index: number): Promise<void> {
    const worker = new Worker(new URL('./gateway-worker.js', import.meta.url), { workerData: this.#dataFor(index) });
    const thread = new GatewayThread(worker, (err, code) => this.#died(index, thread, err, code));
    this.#threads[index] = thread;
    await thread.listening;
  }

  /**
   * An exit nobody asked for, once the launch is up (a replacement that fails to start included): log it,
   * free the counters' lock if it died holding it, replace it unless workers keep dying.
   */
  #died(index: number, thread: GatewayThread, err: Error | null, exitCode: number): void {
    if (!this.#started || this.#stopping !== null || this.#threads[index] !== thread) return;
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
