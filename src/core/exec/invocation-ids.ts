/**
 * Identifiers of the invocations' side, from the CSPRNG: `inv_<24 hex>` and `app_<24 hex>` (SPEC
 * "Identifier shapes"; docs/exec.md "Concepts"). Injected, so tests can name their own.
 */
import { randomBytes } from 'node:crypto';

export interface InvocationIds {
  invocationId(): string;
  approvalId(): string;
}

export const invocationIds: InvocationIds = {
  invocationId: () => `inv_${randomBytes(12).toString('hex')}`,
  approvalId: () => `app_${randomBytes(12).toString('hex')}`,
};
