/** The admission contract against the shared-memory counters of `serve --workers N`, from one thread. */
import { DEFAULT_LIMIT_POLICY, RateLimiter } from '../../src/core/limits/rate-limiter.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../../src/coordination/shared-memory/shared-counter-table.js';
import { admissionContract } from './admission-contract.js';

admissionContract('RateLimiter over a SharedCounterTable', async () => ({
  port: new RateLimiter(DEFAULT_LIMIT_POLICY, new SharedCounterTable(createSharedCounterBuffer(64), { tag: 1 })),
  close: async () => undefined,
}));
