/**
 * API key values (SPEC "API key"): `svc_<project_slug>_<token>` or `svc_mgmt_<token>`, where the token is
 * 256 random bits in base64url (43 characters). Only the SHA-256 of a value is ever stored.
 */
import { hash, randomBytes } from 'node:crypto';

export const KEY_VALUE_PATTERN = /^svc_[a-z0-9][a-z0-9-]*_[A-Za-z0-9_-]{43}$/;

/** Characters kept in clear for recognition in listings: `svc_demo_AbCd`. Never enough to guess. */
const PREFIX_TOKEN_CHARS = 4;

export function mintKeyValue(slugOrMgmt: string): string {
  return `svc_${slugOrMgmt}_${randomBytes(32).toString('base64url')}`;
}

/** One-shot crypto.hash: about twice as fast as createHash().update().digest() for short inputs. */
export function hashKeyValue(value: string): string {
  return hash('sha256', value, 'hex');
}

export function isWellFormedKey(value: string): boolean {
  return value.length <= 128 && KEY_VALUE_PATTERN.test(value);
}

export function keyPrefix(value: string): string {
  return value.slice(0, value.length - 43 + PREFIX_TOKEN_CHARS);
}

/** The key's record id (not secret): `key_<24 hex>`. */
export function newKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}
