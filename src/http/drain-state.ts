/**
 * The server's graceful stop as the responses see it: whether a drain has begun (answers then end their
 * connection), and the drain deadline, at which streams still open are ended on purpose (SPEC "Streaming
 * events": an error frame, code `service_draining`, then `[DONE]`) instead of being cut.
 */
export class DrainState {
  #draining = false;
  readonly #atDeadline = new Set<() => void>();

  get draining(): boolean {
    return this.#draining;
  }

  begin(): void {
    this.#draining = true;
  }

  /** Runs `handler` at the drain deadline unless the returned function is called first. */
  onDeadline(handler: () => void): () => void {
    this.#atDeadline.add(handler);
    return () => this.#atDeadline.delete(handler);
  }

  /** The deadline passed: every registered handler runs once. */
  deadline(): void {
    const handlers = [...this.#atDeadline];
    this.#atDeadline.clear();
    for (const h of handlers) h();
  }
}
