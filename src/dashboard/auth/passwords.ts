/**
 * Password hashing: scrypt from node:crypto (RFC 7914). Parameters N = 2^15, r = 8, p = 1 (OWASP's
 * minimum recommendation for scrypt; 32 MiB and about 50-100 ms a hash on one core), a 16-byte random
 * salt, a 32-byte key. The stored form carries its parameters, `scrypt$15$8$1$<salt b64url>$<key b64url>`,
 * so stronger parameters later leave old hashes verifiable.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
/** Node's default maxmem (32 MiB) is exactly what N=2^15, r=8 needs; room on top. */
const MAXMEM = 64 * 1024 * 1024;

/** Longer passwords only cost hashing time; 1024 is far past any passphrase. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N: 2 ** logN, r, p, maxmem: MAXMEM }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, LOG_N, R, P);
  return `scrypt$${LOG_N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash to verify against when the email is unknown, so the answer takes as long as for a wrong password. */
let decoy: Promise<string> | null = null;
export const decoyHash = (): Promise<string> => (decoy ??= hashPassword(randomBytes(18).toString('base64url')));

/** Constant-time comparison of the derived keys; a malformed stored hash never verifies. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number);
  if (!logN || !r || !p || logN > 20) return false;
  const salt = Buffer.from(parts[4] ?? '', 'base64url');
  const expected = Buffer.from(parts[5] ?? '', 'base64url');
  if (expected.length !== KEY_BYTES) return false;
  const actual = await derive(password, salt, logN, r, p);
  return timingSafeEqual(actual, expected);
}

/** Why a new password is refused, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`;
  if (password.length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  return null;
}
