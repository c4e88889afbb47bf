/**
 * The test hooks (issue 31): they exist only with SWITCHBOARD_TESTING=1 besides their config flag, and
 * answer callers on this machine only, judged by the socket's peer address (never X-Forwarded-For). A
 * caller on another machine cannot be made in a unit test, so the predicate and the wrapper are tested here.
 */
import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../../../src/core/net/address-policy.js';
import { GatewayError } from '../../../src/errors.js';
import type { RouteContext } from '../../../src/http/server.js';
import { loopbackOnly, testClockRoutes, testingAllowed } from '../../../src/routes/ops.js';

describe('isLoopbackAddress', () => {
  it('admits the loopback addresses as a socket reports them, and nothing else', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '0000:0000:0000:0000:0000:0000:0000:0001', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:7f00:0001']) {
      expect(isLoopbackAddress(a), a).toBe(true);
    }
    for (const a of ['10.0.0.5', '192.168.1.2', '0.0.0.0', '::', '::ffff:10.0.0.1', 'fe80::1', '2001:db8::1', '', 'localhost', '127.0.0.1, 10.0.0.1']) {
      expect(isLoopbackAddress(a), a).toBe(false);
    }
  });
});

describe('loopbackOnly', () => {
  const [clock] = testClockRoutes({ now: () => 0, advance: (ms: number) => ms });
  const ctxFrom = (peerAddress: string, forwarded?: string): { ctx: RouteContext; answered: unknown[] } => {
    const answered: unknown[] = [];
    const req = { peerAddress, method: 'POST', path: '/__test/clock', headers: forwarded ? { 'x-forwarded-for': forwarded } : {}, json: () => Promise.resolve({ advance_ms: 5 }) };
    const reply = { json: (status: number, body: unknown) => answered.push([status, body]) };
    return { ctx: { req, reply } as unknown as RouteContext, answered };
  };

  it('answers 404 not_found to a caller on another machine, whatever X-Forwarded-For claims', async () => {
    const { ctx, answered } = ctxFrom('10.1.2.3', '127.0.0.1');
    let thrown: unknown = null;
    try {
      await clock?.handle(ctx, undefined);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).code).toBe('not_found');
    expect(answered).toEqual([]);
  });

  it('runs the hook for a loopback caller', async () => {
    const { ctx, answered } = ctxFrom('127.0.0.1');
    await clock?.handle(ctx, undefined);
    expect(answered).toEqual([[200, { now: 5 }]]);
  });

  it('keeps the wrapped route\'s declaration', () => {
    const route = loopbackOnly({ method: 'GET', pattern: '/__test/x', family: 'ops', auth: { kind: 'public' }, handle: () => undefined });
    expect([route.method, route.pattern, route.auth.kind]).toEqual(['GET', '/__test/x', 'public']);
  });
});

describe('testingAllowed', () => {
  it('needs SWITCHBOARD_TESTING to be exactly 1', () => {
    expect(testingAllowed({ SWITCHBOARD_TESTING: '1' })).toBe(true);
    for (const v of [undefined, '', '0', 'true', 'yes']) expect(testingAllowed({ SWITCHBOARD_TESTING: v })).toBe(false);
  });
});
