/**
 * A value read from the router store and held in memory, so the request path reads it without waiting on
 * the store (issue 12). `reload()` reads it again; `replace()` sets what this process just wrote.
 *
 * A reload that started before another reload or a local write may finish after it, with older state: its
 * answer is dropped, and it resolves when the newest reload does, so a caller that awaits a reload after
 * its write reads that write.
 */
export interface ReloadingCache<T> {
  current(): T;
  /** Resolves once the value is read again; never rejects (a failed read keeps the last value, reported). */
  reload(): Promise<void>;
  replace(value: T): void;
}

export async function createReloadingCache<T>(load: () => Promise<T>, onError: (err: unknown) => void): Promise<ReloadingCache<T>> {
  let value: T = await load();
  let generation = 0;
  let newest: Promise<void> = Promise.resolve();

  const reload = (): Promise<void> => {
    generation += 1;
    const started = generation;
    const run: Promise<void> = load().then(
      (next) => {
        if (started === generation) value = next;
        // Superseded: by a newer reload (wait for it), or by a local write (already in memory).
        else if (newest !== run) return newest;
      },
      (err: unknown) => onError(err),
    );
    newest = run;
    return run;
  };

  return {
    current: () => value,
    reload,
    replace(next) {
      generation += 1;
      value = next;
    },
  };
}
