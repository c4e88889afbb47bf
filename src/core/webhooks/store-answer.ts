/** A dispatch store's answers: at once (SQLite) or after a round trip (PostgreSQL). */

export type StoreAnswer<T> = T | Promise<T>;

/** `then` at once for a synchronous answer (which may throw to the caller), after the round trip otherwise. */
export function onAnswer<T>(answer: StoreAnswer<T>, then: (value: T) => void, failed: (err: unknown) => void): Promise<void> | null {
  if (answer instanceof Promise) return answer.then(then).catch(failed);
  then(answer);
  return null;
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
