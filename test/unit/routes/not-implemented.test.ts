/**
 * The 501 of a pending route. Every keyed family has landed (the multimodel route was the last, issue 16),
 * so no API test can reach one any more; this drives the pending table directly with the one thing its
 * handler reads of a request without a key (the body), as its dashboard entries have no key to check.
 */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import type { RouteContext } from '../../../src/http/server.js';
import { notImplementedRoutes } from '../../../src/routes/not-implemented.js';
import type { Services } from '../../../src/app/services.js';

const services = {} as Services;
const ctx = { req: { body: async () => Buffer.alloc(0) } } as unknown as RouteContext;

describe('pending routes', () => {
  it('answers a route no family serves with 501 not_implemented, naming it', async () => {
    const pending = notImplementedRoutes(services, []).find((r) => r.family === 'dashboard');
    expect(pending).toBeDefined();
    const failure = await Promise.resolve()
      .then(() => pending?.handle(ctx, undefined))
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(GatewayError);
    expect((failure as GatewayError).code).toBe('not_implemented');
    expect((failure as GatewayError).status).toBe(501);
    expect((failure as GatewayError).message).toContain('{provider}');
  });

  it('leaves out a pending route once a family serves the same method and pattern', () => {
    const pattern = '/:project/_semantic/router/v1/chat/completions/multimodel';
    const served = { method: 'POST', pattern, family: 'router', auth: { kind: 'public' }, handle: async () => undefined } as const;
    expect(notImplementedRoutes(services, []).some((r) => r.pattern === pattern)).toBe(true);
    expect(notImplementedRoutes(services, [served]).some((r) => r.pattern === pattern)).toBe(false);
  });
});
