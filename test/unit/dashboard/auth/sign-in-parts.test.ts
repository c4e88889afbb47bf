/** The pure parts of dashboard sign-in (issue 22): password hashes, throttling, `next` targets, cookies. */
import { describe, expect, it } from 'vitest';
import { CounterThrottles } from '../../../../src/core/limits/counter-throttles.js';
import { cookieNames, readCookie, setCookie } from '../../../../src/dashboard/auth/cookies.js';
import { safeNext } from '../../../../src/dashboard/auth/dashboard-route.js';
import { hashPassword, passwordProblem, verifyPassword } from '../../../../src/dashboard/auth/passwords.js';
import { csrfTokenOf, sameSecret } from '../../../../src/dashboard/auth/secrets.js';
import { createAttemptThrottle } from '../../../../src/dashboard/auth/throttle.js';
import { backupCodeHash, newBackupCodes, totpStep } from '../../../../src/dashboard/auth/totp.js';

describe('passwords', () => {
  it('stores scrypt with its parameters and a salt, and verifies only the right password', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery', a)).toBe(true);
    expect(await verifyPassword('correct horse batterY', a)).toBe(false);
    expect(await verifyPassword('x', 'not-a-hash')).toBe(false);
    expect(passwordProblem('short')).toContain('at least 12');
    expect(passwordProblem('twelve chars')).toBeNull();
  });
});

describe('throttle', () => {
  it('refuses past the limit within the window, per kind of key, until the oldest failure leaves it', async () => {
    let now = 0;
    const t = createAttemptThrottle(new CounterThrottles(), 'test', { account: 2, address: 3, windowMs: 60_000 }, () => now);
    expect((await t.attempt({ account: 'a', address: '1' })).kind).toBe('admitted');
    expect((await t.attempt({ account: 'a', address: '1' })).kind).toBe('admitted');
    const refused = await t.attempt({ account: 'a', address: '1' });
    expect(refused).toEqual({ kind: 'refused', waitMs: 60_000 });
    // The refused attempt took nothing from the address: one failure of it is left, for another account.
    expect((await t.attempt({ account: 'b', address: '1' })).kind).toBe('admitted');
    expect((await t.attempt({ account: 'c', address: '1' })).kind).toBe('refused');
    now = 20_000;
    expect(await t.attempt({ account: 'a', address: '2' })).toEqual({ kind: 'refused', waitMs: 40_000 });
    now = 60_000;
    expect((await t.attempt({ account: 'a', address: '2' })).kind).toBe('admitted');
  });

  it('gives a success back: the account is reset and the address unit returned', async () => {
    const now = 5_000;
    const t = createAttemptThrottle(new CounterThrottles(), 'test', { account: 2, address: 2, windowMs: 60_000 }, () => now);
    expect((await t.attempt({ account: 'a', address: '1' })).kind).toBe('admitted');
    const good = await t.attempt({ account: 'a', address: '1' });
    if (good.kind !== 'admitted') throw new Error('refused');
    await good.succeeded();
    // Both counters have room again: the account forgot its failure, the address kept only the failure.
    expect((await t.attempt({ account: 'a', address: '1' })).kind).toBe('admitted');
    expect((await t.attempt({ account: 'a', address: '1' })).kind).toBe('refused');
  });
});

describe('next targets', () => {
  it('stay inside the dashboard', () => {
    expect(safeNext('/dashboard/projects/proj_x/keys?a=1')).toBe('/dashboard/projects/proj_x/keys?a=1');
    for (const bad of ['//evil.example', 'https://evil.example/dashboard', '/dashboard\\@evil', '/v1/models', '', null]) expect(safeNext(bad)).toBeNull();
    // Paths the browser would resolve outside /dashboard (dot segments, encoded or not, and empty segments).
    for (const bad of ['/dashboard/../auth/x', '/dashboard/%2e%2e/evil', '/dashboard/%2E%2E/evil', '/dashboard/..//evil.com', '/dashboard//x', '/dashboardx']) expect(safeNext(bad)).toBeNull();
    expect(safeNext('/dashboard')).toBe('/dashboard');
  });

  it('never hold a control character or a space, which would reach the Location header (issue 31: CR LF set a cookie)', () => {
    for (const bad of ['/dashboard/\r\nSet-Cookie: switchboard_session=ATTACKER; Path=/', '/dashboard/\nX: y', '/dashboard/\0', '/dashboard/\t', '/dashboard/a b', '/dashboard/\x7f', '/dashboard/é']) {
      expect(safeNext(bad)).toBeNull();
    }
    expect(safeNext('/dashboard/account?x=%0D%0A')).toBe('/dashboard/account?x=%0D%0A');
  });
});

describe('cookies and CSRF tokens', () => {
  it('use the __Host- prefix only with Secure', () => {
    expect(cookieNames(true).session).toBe('__Host-switchboard_session');
    expect(cookieNames(false).session).toBe('switchboard_session');
    expect(setCookie('__Host-switchboard_session', 'v', true, null)).toBe('__Host-switchboard_session=v; Path=/; HttpOnly; SameSite=Lax; Secure');
    expect(setCookie('switchboard_session', '', false, 0)).toBe('switchboard_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0');
    expect(readCookie('a=1; switchboard_session=xyz; b=2', 'switchboard_session')).toBe('xyz');
    expect(readCookie('xswitchboard_session=1', 'switchboard_session')).toBeNull();
  });

  it('derives a per-session CSRF token and compares secrets in constant time', () => {
    expect(csrfTokenOf('session-one')).not.toBe(csrfTokenOf('session-two'));
    expect(sameSecret(csrfTokenOf('s'), csrfTokenOf('s'))).toBe(true);
    expect(sameSecret('abc', 'abcd')).toBe(false);
  });
});

describe('TOTP and backup codes', () => {
  it('accepts the RFC 6238 SHA-1 test vector within one step of drift, and nothing else', () => {
    // RFC 6238 appendix B, T = 59 s, secret "12345678901234567890" (base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ): 94287082 -> last 6 digits.
    const secret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
    expect(totpStep(secret, '287082', 59_000)).toBe(1);
    expect(totpStep(secret, '287082', 59_000 + 30_000)).toBe(1);
    expect(totpStep(secret, '287082', 59_000 + 90_000)).toBeNull();
    expect(totpStep(secret, '28708', 59_000)).toBeNull();
  });

  it('makes ten distinct codes whose hash ignores case and the dash', () => {
    const codes = newBackupCodes();
    expect(new Set(codes).size).toBe(10);
    const code = codes[0] ?? '';
    expect(backupCodeHash(code.toUpperCase().replace('-', ' '))).toBe(backupCodeHash(code));
  });
});
