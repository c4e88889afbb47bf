/**
 * Identifiers and secrets of the webhook family, from the CSPRNG: endpoint ids are UUIDs (SPEC "Webhook
 * endpoint"), events `evt_<24 hex>` (SPEC "Event envelope"), deliveries `del_<24 hex>`, secrets
 * `whsec_<43 base64url>` (256 bits).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { WebhookIds } from './webhook-manager.js';

export const webhookIds: WebhookIds = {
  webhookId: () => randomUUID(),
  eventId: () => `evt_${randomBytes(12).toString('hex')}`,
  deliveryId: () => `del_${randomBytes(12).toString('hex')}`,
  secret: () => `whsec_${randomBytes(32).toString('base64url')}`,
};
