/**
 * The webhooks aggregate's tables, declared once for both backends: what every query of the endpoints
 * store, the outbox, the delivery queue and the retention (this folder) is checked against at compile time. Created by SQLite
 * migrations 004 and 016 and PostgreSQL migration 003 (history: released migrations are never edited);
 * test/contract/store-schema.test.ts compares this declaration with both live schemas. Where the two
 * differ by design, the column's kind says so: `events` is text[] in PostgreSQL and JSON text in SQLite,
 * `metadata` jsonb and JSON text, `is_active` boolean and 0/1 (table-schema.ts).
 */
import type { DeliveryState } from '../../core/webhooks/delivery.js';
import { boolean, generated, integer, json, maybeText, nullable, onlyIn, text, textArray, time, type GatewayInstancesRead, type TablesOf } from '../sql/table-schema.js';

const maybeInteger = () => nullable(integer());

export const WEBHOOKS_SCHEMA = {
  webhook_endpoints: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    url: text(),
    description: maybeText(),
    /** Sealed by the SecretBox (secret-box.ts), the endpoint id as associated data. */
    secret_sealed: text(),
    events: textArray(),
    is_active: boolean(),
    metadata: json<Readonly<Record<string, string>>>(),
    created_at: time(),
    updated_at: time(),
  },
  webhook_events: {
    /** PostgreSQL's insertion order; SQLite's table keeps it in its rowid. */
    seq: onlyIn('postgres', generated(integer())),
    /** `evt_<24 hex>`: the idempotency key of an append. */
    id: text(),
    project_id: text(),
    type: text(),
    /** The envelope, serialized once: every attempt to every subscriber sends these bytes. */
    body: text(),
    created_at: time(),
  },
  webhook_deliveries: {
    seq: generated(integer()),
    id: text(),
    webhook_id: text(),
    event_id: text(),
    event_type: text(),
    state: text<DeliveryState>(),
    attempt_count: integer(),
    next_attempt_at: maybeInteger(),
    http_status: maybeInteger(),
    response_body: maybeText(),
    error_message: maybeText(),
    created_at: time(),
    updated_at: time(),
    claimed_by: maybeText(),
    claim_expires_at: maybeInteger(),
  },
} as const;

/** The delivery queue gives back the claims of instances no longer registered (instances-registry.ts owns the table). */
export type WebhooksTables = TablesOf<typeof WEBHOOKS_SCHEMA> & GatewayInstancesRead;
