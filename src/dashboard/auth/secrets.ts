/**
 * Random ids for cookies (sessions, OIDC flows) and their stored form. Only the SHA-256 of an id is stored,
 * so the sessions table lets nobody in; the CSRF token is derived from the raw id (HMAC), so it is per
 * session, needs no column, and cannot be computed from anything the store holds.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** 32 random bytes: 256 bits, base64url. */
export const randomId = (): string => randomBytes(32).toString('base64url');

export const sha256 = (value: string): string => createHash('sha256').update(value).digest('base64url');

export const csrfTokenOf = (sessionId: string): string => createHmac('sha256', sessionId).update('switchboard-dashboard-csrf').digest('base64url');

/** Constant-time string equality (lengths may differ: then false, after a compare of equal cost). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  if (x.length !== y.length) {
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}
