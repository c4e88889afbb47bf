/**
 * Time-driven transitions of the execution surface: invocation timeouts and approval escalations. Due
 * times are stored and compared with the injected clock at every poll (no timer per invocation), as the
 * webhook dispatcher does: a test that moves the clock (POST /__test/clock) sees the effect at the next
 * poll, and a restart resumes the same deadlines. Every instance on a store polls the same rows; the
 * service's guarded commits let one of them apply each transition.
 */
import type { InvocationService } from './invocation-service.js';
import { DUE_BATCH } from './invocation-upkeep.js';

/** A poll stops after this many full batches; the rest waits for the next poll (the event loop runs). */
const MAX_BATCHES = 20;

export interface ExecClockOptions {
  /** Real milliseconds between polls. */
  readonly pollMs: number;
  /** Every this many polls, queued invocations look for an agent again and expired Idempotency-Keys go. */
  readonly sweepEvery: number;
  readonly sweep: () => void | Promise<void>;
  readonly onError: (err: unknown) => void;
}

export class ExecClock {
  readonly #service: InvocationService;
  readonly #options: ExecClockOptions;
  #timer: NodeJS.Timeout | null = null;
  #polls = 0;
  #polling = false;

  constructor(service: InvocationService, options: ExecClockOptions) {
    this.#service = service;
    this.#options = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.poll(), this.#options.pollMs);
    // The poll never keeps a process alive on its own (a CLI that opened the service, a test).
    this.#timer.unref();
  }

  /** One poll: everything due now, in batches until none is left. A poll still running skips the next tick. */
  async poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      for (let i = 0; i < MAX_BATCHES && (await this.#service.lapseDue()) === DUE_BATCH; i++);
      for (let i = 0; i < MAX_BATCHES && (await this.#service.expireDue()) === DUE_BATCH; i++);
      // After the timeouts: what this instance dispatched and another ended reaches its agent now.
      await this.#service.reconcile();
      this.#polls += 1;
      if (this.#polls % this.#options.sweepEvery === 0) await this.#options.sweep();
    } catch (err) {
      this.#options.onError(err);
    } finally {
      this.#polling = false;
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
