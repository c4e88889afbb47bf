/**
 * The server's graceful stop as the responses see it: whether a drain has begun (answers then end their
 * connection), and the drain deadline, at which streams still open are ended on purpose (SPEC "Streaming
 * events": an error frame, code `service_draining`, then `[DONE]`) instead of being cut.
 */

/**
 * One stream's handler in the deadline's list. A linked list, not a Set: every streamed answer joins and
 * leaves it, and a Set under that churn rehashes every few dozen answers, each old hash table keeping a
 * link to its successor and its entries. Once one such table has reached the old generation, the scavenger
 * takes it for a root and every later table, and every answer they hold (a whole turn: its reply, frames,
 * Response), survives and is promoted: ~5 MB a scavenge where ~50 KB was live (issue 35, bench/RESULTS.md
 * round 8). A node left here drops its links, so a dead one holds nothing.
 */
class DeadlineWatch {
  handler: (() => void) | null;
  prev: DeadlineWatch | null = null;
  next: DeadlineWatch | null;

  constructor(handler: () => void, next: DeadlineWatch | null) {
    this.handler = handler;
    this.next = next;
  }
}

export class DrainState {
  #draining = false;
  /** The newest watch first. */
  #first: DeadlineWatch | null = null;

  get draining(): boolean {
    return this.#draining;
  }

  begin(): void {
    this.#draining = true;
  }

  /** Runs `handler` at the drain deadline unless the returned function is called first. */
  onDeadline(handler: () => void): () => void {
    const watch = new DeadlineWatch(handler, this.#first);
    if (this.#first !== null) this.#first.prev = watch;
    this.#first = watch;
    return () => this.#leave(watch);
  }

  /** The deadline passed: every registered handler runs once. */
  deadline(): void {
    const handlers: (() => void)[] = [];
    for (let w = this.#first; w !== null; w = w.next) if (w.handler !== null) handlers.push(w.handler);
    while (this.#first !== null) this.#leave(this.#first);
    for (const h of handlers) h();
  }

  #leave(watch: DeadlineWatch): void {
    if (watch.handler === null) return;
    watch.handler = null;
    if (watch.prev !== null) watch.prev.next = watch.next;
    else this.#first = watch.next;
    if (watch.next !== null) watch.next.prev = watch.prev;
    watch.prev = null;
    watch.next = null;
  }
}
