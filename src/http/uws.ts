/**
 * Loads uWebSockets.js and proves it is the native binary. The registry republish silently falls back to
 * a pure-JS server when its binary does not load (wrong Node ABI, missing glibc symbols): ten times
 * slower and without SSLApp. We refuse to start on it unless the operator explicitly allows it.
 */
import { createRequire } from 'node:module';
import type * as UwsModule from 'uWebSockets.js';

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
