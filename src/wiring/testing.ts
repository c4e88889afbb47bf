/**
 * The test hooks: they need SWITCHBOARD_TESTING=1 as well as their config flag (issue 31), and say so at
 * every start. The clock is the controllable one only with its hook on.
 */
import { createControllableClock, systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { TESTING_ENV, testingAllowed } from '../routes/ops.js';

export interface TestingHooks {
  readonly clock: boolean;
  readonly events: boolean;
}

export function wireTesting(config: Config, logger: Logger): { testing: TestingHooks; clock: Clock } {
  const testing = testingHooks(config, logger);
  const clock = testing.clock ? createControllableClock() : systemClock;
  if (clock.advance) logger.warn('testing.controllable_clock is on: POST /__test/clock (loopback callers only) can move time; never use this in production');
  return { testing, clock };
}

/**
 * Which `testing:` hooks are on: those the config sets, and only with SWITCHBOARD_TESTING=1 in the
 * environment; a flag set without it is ignored, and the log says so at start.
 */
function testingHooks(config: Config, logger: Logger): TestingHooks {
  const { controllable_clock: clock, event_injection: events } = config.testing;
  if ((clock || events) && !testingAllowed(process.env)) {
    logger.warn({ testing: config.testing }, `testing: flags are set but ${TESTING_ENV}=1 is not: the test hooks (/__test/...) are off`);
    return { clock: false, events: false };
  }
  return { clock, events };
}
