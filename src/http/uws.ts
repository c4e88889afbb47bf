/**
 * Loads uWebSockets.js and proves it is the native binary. The registry republish silently falls back to
 * a pure-JS server when its binary does not load (wrong Node ABI, missing glibc symbols): ten times
 * slower and without SSLApp. We refuse to start on it unless the operator explicitly allows it.
 */
import { createRequire } from 'node:module';
import type * as UwsModule from 'uWebSockets.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';

export type Uws = typeof UwsModule;

const require = createRequire(import.meta.url);

export interface LoadedUws {
  readonly uws: Uws;
  readonly native: boolean;
  /** The binary file that was loaded, for the start-up log. */
  readonly binary: string | null;
}

export function loadUws(): LoadedUws {
  const uws = require('uWebSockets.js') as Uws;
  const binary = Object.keys(require.cache).find((p) => /uWebSockets\.js[\\/]binaries[\\/]uws_.*\.node$/.test(p)) ?? null;
  const nativeApp = /\[native code\]/.test(Function.prototype.toString.call(uws.App));
  return { uws, native: binary !== null && nativeApp && typeof uws.SSLApp === 'function', binary };
}

export class UwsFallbackError extends Error {
  constructor() {
    super(
      'uWebSockets.js loaded its pure-JS fallback instead of the native binary ' +
        `(node ${process.version}, ABI ${process.versions.modules}, ${process.platform}-${process.arch}). ` +
        'Reinstall on Node 20 (npm install), or set server.allow_uws_fallback: true (or SWITCHBOARD_ALLOW_UWS_FALLBACK=1) to run slowly anyway.',
    );
    this.name = 'UwsFallbackError';
  }
}

/**
 * A copy of a chunk uWS hands to a callback (it reuses or neuters that memory once the callback returns).
 * Copied through a view: a small chunk lands in Node's pooled buffer memory, where `chunk.slice(0)` made a
 * fresh ArrayBuffer per chunk for the garbage collector to sweep (~0.5 us more per request body).
 */
export function copyChunk(chunk: ArrayBuffer): Buffer {
  return Buffer.from(new Uint8Array(chunk));
}

/** In the binary (uWS.js 20.30) but not in its typings: listen's options argument and its one flag. */
interface ListenWithOptions {
  listen(host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void): TemplatedApp;
}

/**
 * Listens without SO_REUSEPORT, which uWS sets by default: a second gateway started on the same port must
 * fail with "address in use" instead of silently sharing the port (each with its own limiter, both writing
 * one store).
 */
export function listenExclusive(uws: Uws, app: TemplatedApp, host: string, port: number, cb: (socket: us_listen_socket | false) => void): void {
  const flag = (uws as Uws & { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
  if (flag === undefined) throw new Error('this uWebSockets.js build has no LIBUS_LISTEN_EXCLUSIVE_PORT: cannot listen exclusively');
  (app as unknown as ListenWithOptions).listen(host, port, flag, cb);
}
