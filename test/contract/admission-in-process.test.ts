/** The admission contract against the embedded default: RateLimiter in this process. */
import { DEFAULT_LIMIT_POLICY, RateLimiter } from '../../src/core/limits/rate-limiter.js';
import { admissionContract } from './admission-contract.js';

admissionContract('in-process RateLimiter', async () => ({ port: new RateLimiter(DEFAULT_LIMIT_POLICY), close: async () => undefined }));
