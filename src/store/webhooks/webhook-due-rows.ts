/**
 * The due delivery rows the delivery queue reads (webhook-delivery-queue.ts), and what the dispatcher gets
 * of them.
 */
import type { DueDelivery } from '../../core/webhooks/delivery.js';
import type { SecretBox } from '../secret-box.js';

/** A due delivery with what sending it needs: its endpoint's URL and sealed secret, its event's body. */
export interface DueRow {
  seq: number;
  id: string;
  webhook_id: string;
  attempt_count: number;
  url: string;
  secret_sealed: string;
  body: string;
}

const OPENED_SECRETS_MAX = 10_000;

/**
 * Due rows as the dispatcher takes them, each endpoint's secret opened once per sealed value (an AES-GCM
 * decrypt: cheap, but not per delivery). A secret that does not open is null: the dispatcher fails the
 * delivery instead of sending it unsigned.
 */
export function dueDeliveryReader(box: SecretBox): (row: DueRow) => DueDelivery {
  const secrets = new Map<string, { sealed: string; plain: string | null }>();
  function openSecret(webhookId: string, sealed: string): string | null {
    const cached = secrets.get(webhookId);
    if (cached?.sealed === sealed) return cached.plain;
    let plain: string | null;
    try {
      plain = box.open(sealed, webhookId);
    } catch {
      plain = null;
    }
    if (secrets.size >= OPENED_SECRETS_MAX) secrets.clear();
    secrets.set(webhookId, { sealed, plain });
    return plain;
  }
  return (r) => ({
    seq: r.seq,
    id: r.id,
    webhookId: r.webhook_id,
    url: r.url,
    secret: openSecret(r.webhook_id, r.secret_sealed),
    body: r.body,
    attemptCount: r.attempt_count,
  });
}
