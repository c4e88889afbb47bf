/**
 * Webhook signing (SPEC Events 2), off the event loop: one task signs a whole dispatch batch, so the
 * thread hop (~340 us cold, see BASELINE.md) is paid once per batch, not per delivery.
 */
import { createHmac } from 'node:crypto';
import { SIGNATURE_PREFIX } from '../src/core/webhooks/signature.js';
import type { SignInput, SignOutput } from '../src/pool/tasks.js';

export default function sign(input: SignInput): SignOutput {
  // Same bytes as signedPayload(timestamp, body), without building the concatenated string.
  return input.items.map((item) => SIGNATURE_PREFIX + createHmac('sha256', item.secret).update(`${item.timestamp}.`).update(item.body).digest('hex'));
}
