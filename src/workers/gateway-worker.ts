/**
 * One worker thread of `serve --workers N`: a whole gateway (startGateway) with its own event loop, uWS
 * app and listener on the shared port, its own store connections and piscina pool; the limit counters and
 * the bus are the process's (coordination.ts). Logs go to fd 1 from this thread, each line with `worker`.
 *
 * The thread ends only after the gateway closed: uWS aborts the process ("uv_loop_close() while having
 * open handles") if a thread ends with a listen socket or app open, so a failed start closes what it
 * opened before reporting, and nothing here calls process.exit.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../config.js';
import { UwsFallbackError } from '../http/uws.js';
import { createLogger, flushLogger } from '../log.js';
import { startGateway, type RunningGateway } from '../main.js';
import { StoreTooNewError } from '../store/db.js';
import { SecretKeyError } from '../store/secret-box.js';
import type { GatewayWorkerData, WorkerCommand, WorkerReport } from './worker-protocol.js';

if (parentPort === null) throw new Error('gateway-worker.ts runs as a worker thread (src/workers/workers-launcher.ts)');
const port = parentPort;
const data = workerData as GatewayWorkerData;
const report = (message: WorkerReport): void => port.postMessage(message);
const logger = createLogger(data.config.server.log_level).child({ worker: data.shared.workerIndex });

/** The operator's errors: the launch exits 2, as a single-threaded `serve` does (cli.ts). */
const isOperatorError = (err: unknown): boolean =>
  err instanceof ConfigError || err instanceof UwsFallbackError || err instanceof SecretKeyError || err instanceof StoreTooNewError;

async function run(): Promise<void> {
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({ config: data.config, host: data.host, port: data.port, dbPath: data.dbPath, logger, shared: data.shared });
  } catch (err) {
    logger.error({ err }, 'worker failed to start');
    flushLogger(logger);
    report({ kind: 'failed', message: (err as Error).message ?? String(err), exitCode: isOperatorError(err) ? 2 : 1 });
    port.close();
    return;
  }
  port.on('message', (command: WorkerCommand) => {
    if (command.kind !== 'drain') return;
    gateway.close().then(
      () => {
        report({ kind: 'stopped' });
        port.close();
      },
      (err: unknown) => {
        logger.error({ err }, 'worker drain failed');
        flushLogger(logger);
        throw err;
      },
    );
  });
  report({ kind: 'listening', url: gateway.url });
}

void run();
