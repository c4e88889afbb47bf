/**
 * The stagings (FilesStore.stage) still writing, so that a graceful stop can wait for them: an upload cut
 * off by the stop fails its write, and the write removes its own bytes (a temp file, a staged blob), but
 * only if the process is still there when it does. Both files backends use it.
 */
export class StagingsInFlight {
  readonly #writing = new Set<Promise<unknown>>();

  /** Runs `stage` and keeps its promise until it settles. */
  track<T>(stage: Promise<T>): Promise<T> {
    this.#writing.add(stage);
    const forget = (): void => void this.#writing.delete(stage);
    stage.then(forget, forget);
    return stage;
  }

  /** Resolves once every staging in flight has settled, or after `timeoutMs` (a write stuck on its disk must not hold the stop). */
  async settled(timeoutMs: number): Promise<void> {
    if (this.#writing.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.allSettled([...this.#writing]), bound]);
    clearTimeout(timer);
  }
}
