/**
 * The gateway's clock. Production reads Date.now. A test config may make it controllable
 * (`testing.controllable_clock: true`, refused together with `server.production: true`): then
 * `POST /__test/clock {"advance_ms": N}` moves it forward, so rate windows, key grace periods and
 * webhook retry schedules are tested against a real process without sleeping.
 */

export interface Clock {
  /** Unix milliseconds. */
  now(): number;
  /** Only on a controllable clock; moves time forward. */
  advance?(ms: number): number;
}

export const systemClock: Clock = { now: Date.now };

export function createControllableClock(): Required<Clock> {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms) {
      offset += ms;
      return Date.now() + offset;
    },
  };
}
