/**
 * The limits step of every keyed request, once its key is authenticated (SPEC Limits): the rate limiters
 * of the request's class. Shared by the routes (routes/guard.ts requireKey) and the work the gateway runs
 * for a key with no request of its own (batch lines). From this point on every answer, success or error,
 * carries the RateLimit headers; a refused request gets 429 and consumes nothing.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { isPromise } from '../core/coordination/admission-port.js';
import { refusalError, writeRateLimitHeaders } from '../core/limits/limit-headers.js';
import type { Admission, LimitClass } from '../core/limits/rate-limiter.js';
import type { Services } from './services.js';
import type { TurnSink } from './turn-io.js';

/**
 * A Promise comes back only from an asynchronous admission port (shared limits): the embedded limiter
 * answers at once and this stays synchronous, with no microtask added.
 */
export function admitKey(services: Services, reply: Pick<TurnSink, 'setHeader'>, auth: AuthenticatedKey, cls: LimitClass, now: number): AuthenticatedKey | Promise<AuthenticatedKey> {
  const admission = services.limits.admit(auth.project, auth.key, cls, now);
  if (isPromise(admission)) return admission.then((decided) => admitted(reply, auth, decided));
  return admitted(reply, auth, admission);
}

function admitted(reply: Pick<TurnSink, 'setHeader'>, auth: AuthenticatedKey, admission: Admission): AuthenticatedKey {
  writeRateLimitHeaders(admission.view, (name, value) => reply.setHeader(name, value));
  if (admission.refusal) throw refusalError(admission.refusal);
  return auth;
}
