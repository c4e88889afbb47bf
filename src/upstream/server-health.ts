/**
 * Passive health of one upstream server, as a small state machine with time passed in (no clock, no I/O):
 *
 *   up --(failure_threshold failures in a row)--> down --(cooldown over, a probe starts)--> probing
 *   probing --(probe answered)--> up          probing --(probe failed)--> down (a new cooldown)
 *
 * A failure is a server that could not be reached or answered 502, 503 or 504: trouble of the server, not
 * of one request. Any other answer, 4xx and 500 included, proves it reachable and resets the count (a 500
 * is as often one request's bad luck; a 401 is a configuration error that no cooldown fixes). While a
 * server is out, only its probe decides: a late answer to a request sent before it went down says nothing
 * about it now, so it neither brings it back nor extends its cooldown.
 */

export type HealthState = 'up' | 'down' | 'probing';

export interface HealthPolicy {
  /** Failures in a row that take the server out. */
  readonly failureThreshold: number;
  /** How long it stays out before a probe may bring it back. */
  readonly cooldownMs: number;
}

/** What a call changed, for the one log line an operator gets per change. */
export type HealthChange = 'taken_out' | 'back' | 'still_down' | null;

export class ServerHealth {
  readonly #policy: HealthPolicy;
  #state: HealthState = 'up';
  #failures = 0;
  #downUntil = 0;
  #lastFailure: string | null = null;

  constructor(policy: HealthPolicy) {
    this.#policy = policy;
  }

  get state(): HealthState {
    return this.#state;
  }

  /** Failures in a row so far (reset by any answer while up, or by a good probe). */
  get failures(): number {
    return this.#failures;
  }

  /** The cause of the newest failure (`ECONNREFUSED 127.0.0.1:9`, `HTTP 503 from ...`), null when none. */
  get lastFailure(): string | null {
    return this.#lastFailure;
  }

  /** When a down server's cooldown ends (Unix ms); null unless down. */
  get retryAt(): number | null {
    return this.#state === 'down' ? this.#downUntil : null;
  }

  /** Whether new requests may be sent to it. */
  get available(): boolean {
    return this.#state === 'up';
  }

  /** The server answered (a request, while up). */
  succeeded(): HealthChange {
    if (this.#state === 'up') this.#failures = 0;
    return null;
  }

  /** A request to it failed (not reachable, or 502/503/504). */
  failed(now: number, cause: string): HealthChange {
    this.#lastFailure = cause;
    if (this.#state !== 'up') return null;
    this.#failures += 1;
    if (this.#failures < this.#policy.failureThreshold) return null;
    this.#takeOut(now);
    return 'taken_out';
  }

  /**
   * True once per cooldown: the caller must then run one probe and report it. Asked whenever the pool
   * is read (a pick, a health report), so probes need no timer of their own.
   */
  probeDue(now: number): boolean {
    if (this.#state !== 'down' || now < this.#downUntil) return false;
    this.#state = 'probing';
    return true;
  }

  probeSucceeded(): HealthChange {
    if (this.#state !== 'probing') return null;
    this.#state = 'up';
    this.#failures = 0;
    return 'back';
  }

  probeFailed(now: number, cause: string): HealthChange {
    if (this.#state !== 'probing') return null;
    this.#lastFailure = cause;
    this.#takeOut(now);
    return 'still_down';
  }

  #takeOut(now: number): void {
    this.#state = 'down';
    this.#downUntil = now + this.#policy.cooldownMs;
  }
}

/** The statuses that count against a server: it, or the proxy in front of it, cannot serve now. */
export function isServerFailureStatus(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}
