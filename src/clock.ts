/**
 * The gateway's clock. Production reads Date.now. A test config may make it controllable
 * (`testing.controllable_clock: true`, refused together with `server.production: true`): then
 * `POST /__test/clock {"advance_ms": N}` moves it forward, so rate windows, key grace periods and
 * webhook retry schedules are tested against a real process without sleeping. `"freeze": true` also
 * stops it, so a test whose assertions are exact to the second (a Retry-After after 100 requests) does
 * not depend on how fast a loaded machine sends them; `"freeze": false` lets it run again.
 */

export interface Clock {
  /** Unix milliseconds. */
  now(): number;
  /** Only on a controllable clock; moves time forward. */
  advance?(ms: number): number;
  /** Only on a controllable clock; stops it at its current reading (true) or lets it run on from there (false). */
  freeze?(frozen: boolean): number;
}

export const systemClock: Clock = { now: Date.now };

export function createControllableClock(): Required<Clock> {
  let offset = 0;
  /** The reading it stopped at, or null while it runs. */
  let frozenAt: number | null = null;
  const now = (): number => frozenAt ?? Date.now() + offset;
  return {
    now,
    advance(ms) {
      if (frozenAt === null) offset += ms;
      else frozenAt += ms;
      return now();
    },
    freeze(frozen) {
      if (frozen && frozenAt === null) frozenAt = now();
      if (!frozen && frozenAt !== null) {
        offset = frozenAt - Date.now();
        frozenAt = null;
      }
      return now();
    },
  };
}
