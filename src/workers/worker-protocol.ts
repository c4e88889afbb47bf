/**
 * What the main thread of `serve --workers N` and its gateway worker threads tell each other
 * (workers-launcher.ts, gateway-worker.ts). The config travels as data (structured clone), read from its
 * file once by the main thread; the shared counters' buffer travels by reference.
 */
import type { Config } from '../config.js';
import type { SharedCoordination } from '../coordination/coordination.js';

export interface GatewayWorkerData {
  readonly config: Config;
  readonly host: string;
  /** Never 0: the main thread chose the port that every worker listens on (SO_REUSEPORT). */
  readonly port: number;
  readonly dbPath: string;
  readonly shared: SharedCoordination;
}

/** Worker -> main. */
export type WorkerReport =
  | { readonly kind: 'listening'; readonly url: string }
  /** startGateway threw: the launch fails with this message (`exitCode` 2 for the operator's errors). */
  | { readonly kind: 'failed'; readonly message: string; readonly exitCode: number }
  | { readonly kind: 'stopped' };

/** Main -> worker: stop taking requests, finish those in flight (server.drain_timeout_ms), close, end. */
export type WorkerCommand = { readonly kind: 'drain' };
