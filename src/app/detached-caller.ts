/**
 * The caller of a turn the gateway runs on someone's behalf with no client connection of its own: a
 * background response, a batch line, a dashboard playground turn. It satisfies `RoutedCaller` (turn-io.ts)
 * as the server's request does, and aborts when its owner says so (a cancel, a page that closed).
 */
import type { RequestTrace } from '../tracing/trace-port.js';
import type { RoutedCaller, TurnLog } from './turn-io.js';

export interface DetachedCallerOptions {
  readonly requestId: string;
  /** Header names lower-case: the augmentation flags and workspace headers the turn reads. */
  readonly headers: Readonly<Record<string, string>>;
  /** Decision rows name the surface and the address of the person behind the turn. */
  readonly surface?: 'api' | 'dashboard';
  readonly clientIp?: string;
}

export class DetachedCaller implements RoutedCaller {
  readonly requestId: string;
  readonly startedAt = performance.now();
  readonly headers: Readonly<Record<string, string>>;
  readonly log: TurnLog & { project?: string; keyId?: string } = {};
  readonly surface: 'api' | 'dashboard';
  readonly clientIp: string;
  readonly trace: RequestTrace | null = null;
  readonly #controller = new AbortController();
  #listeners: (() => void)[] = [];

  constructor(o: DetachedCallerOptions) {
    this.requestId = o.requestId;
    this.headers = o.headers;
    this.surface = o.surface ?? 'api';
    this.clientIp = o.clientIp ?? '127.0.0.1';
  }

  get aborted(): boolean {
    return this.#controller.signal.aborted;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()];
  }

  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.#listeners.push(listener);
  }

  abort(): void {
    if (this.aborted) return;
    this.#controller.abort();
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}
