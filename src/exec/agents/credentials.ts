/**
 * Credentials and identifiers of the agents' side (docs/exec.md "Concepts"): join keys `sjk_` and agent
 * keys `sak_`, each 256 random bits in base64url (43 characters), stored only as SHA-256 hex, as API
 * keys are (core/auth/key-token.ts); join key ids `jk_<24 hex>`, agent ids `agt_<24 hex>`.
 */
import { randomBytes } from 'node:crypto';
import { hashKeyValue } from '../../core/auth/key-token.js';

const JOIN_KEY = /^sjk_[A-Za-z0-9_-]{43}$/;
const AGENT_KEY = /^sak_[A-Za-z0-9_-]{43}$/;

export type CredentialKind = 'join_key' | 'agent_key';

export const mintJoinKey = (): string => `sjk_${randomBytes(32).toString('base64url')}`;
export const mintAgentKey = (): string => `sak_${randomBytes(32).toString('base64url')}`;
export const newJoinKeyId = (): string => `jk_${randomBytes(12).toString('hex')}`;
export const newAgentId = (): string => `agt_${randomBytes(12).toString('hex')}`;

export const hashCredential = hashKeyValue;

/** Which kind of credential a bearer value is by its shape; null: neither (refused before any lookup). */
export function credentialKind(value: string): CredentialKind | null {
  if (JOIN_KEY.test(value)) return 'join_key';
  if (AGENT_KEY.test(value)) return 'agent_key';
  return null;
}
