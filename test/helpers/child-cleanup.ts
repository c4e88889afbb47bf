/**
 * Setup file (vitest.config.ts `setupFiles`): after each test file's own afterAll hooks (vitest runs
 * after-hooks in reverse, so this one registered first runs last), kill every child process it left
 * running, e.g. one a timed-out test started and never reached to stop; and kill them on exit too, if
 * the worker dies before its hooks run.
 */
import { afterAll } from 'vitest';
import { killTrackedChildren, killTrackedChildrenOnExit } from './child-registry.js';

afterAll(async () => {
  const killed = await killTrackedChildren();
  if (killed > 0) process.stderr.write(`child-cleanup: killed ${killed} process(es) the test file left running\n`);
});

killTrackedChildrenOnExit();
