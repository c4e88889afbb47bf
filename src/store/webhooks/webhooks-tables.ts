/**
 * The webhooks aggregate's tables the endpoints store works on, declared once for both backends: what
 * every query in webhook-endpoints-store.ts is checked against at compile time. Created by SQLite
 * migrations 004 and 016 and PostgreSQL migration 003 (history: released migrations are never edited);
 * test/contract/store-schema.test.ts compares this declaration with both live schemas. Where the two
 * differ by design, the column's kind says so: `events` is text[] in PostgreSQL and JSON text in SQLite,
 * `metadata` jsonb and JSON text, `is_active` boolean and 0/1 (table-schema.ts).
 */
import type { DeliveryState } from '../../core/webhooks/delivery.js';
import { boolean, generated, integer, json, maybeText, nullable, text, textArray, time, type TablesOf } from '../sql/table-schema.js';

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

/**
 * Only deleted from here (an endpoint's orphaned events): the outbox (webhook-outbox.ts, postgres/
 * webhooks-store.ts) owns the table, not moved yet; PostgreSQL's has a `seq` SQLite's lacks.
 */
type EventsDelete = { webhook_events: { id: string } };

export type WebhooksTables = TablesOf<typeof WEBHOOKS_SCHEMA> & EventsDelete;
