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
 *   - replaces a worker that dies and drains every worker on stop() (worker-supervisor.ts).
 */
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { broadcastChannelName } from '../coordination/broadcast-bus.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../coordination/shared-memory/shared-counter-table.js';
import { createSharedThrottleBuffer } from '../coordination/shared-memory/shared-throttle-table.js';
import type { Logger } from '../log.js';
import { openDatabase } from '../store/db.js';
import { resolveStorePath } from '../store/store-path.js';
import { freePort } from './free-port.js';
import { WorkerSupervisor } from './worker-supervisor.js';
export { WorkerStartError } from './gateway-thread.js';
import type { GatewayWorkerData } from './worker-protocol.js';

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
  // server.metrics.port: one listener port for every worker too, as the main port (issue 32).
  const workersConfig = await withMetricsPort(config, host);
  const store = resolveStorePath(options.dbPath ?? config.storage.path);
  // Migrations run here once; each worker's openDatabase then finds the schema current.
  openDatabase(store.path).close();
  const capacity = counterCapacityFor(config);
  const counters = createSharedCounterBuffer(capacity);
  const throttles = createSharedThrottleBuffer();
  const channel = broadcastChannelName(randomUUID());
  const dataFor = (workerIndex: number): GatewayWorkerData => ({ config: workersConfig, host, port, dbPath: store.path, shared: { counters, throttles, channel, workerIndex, workers: options.workers } });
  // The main thread's handle on the counters' mutex: a dead worker's lock is freed with it.
  const mutex = new SharedCounterTable(counters, { tag: options.workers + 1 }).lock;
  const spawn = (index: number): Worker => new Worker(new URL('./gateway-worker.js', import.meta.url), { workerData: dataFor(index) });
  const supervisor = new WorkerSupervisor(options.workers, spawn, (index) => mutex.releaseIfHeldBy(index + 1), logger, () => store.discard());
  await supervisor.startAll();
  const scheme = config.server.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, workers: options.workers, region: config.server.region, production: config.server.production, shared_counters: capacity }, 'switchboard listening');
  return { url, stop: () => supervisor.stop(), gaveUp: supervisor.gaveUp };
}

/** `server.metrics.port: 0` becomes one free port, so the workers share the metrics listener as the main one. */
async function withMetricsPort(config: Config, host: string): Promise<Config> {
  const metrics = config.server.metrics;
  if (metrics.port !== 0) return config;
  const port = await freePort(metrics.host ?? host);
  return { ...config, server: { ...config.server, metrics: { ...metrics, port } } };
}
