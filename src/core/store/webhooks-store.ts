/**
 * The webhooks aggregate's storage port (issue 12): endpoints, the event outbox, the delivery queue and
 * the retention of history. Implemented once for SQLite and PostgreSQL (store/webhooks/webhooks-store.ts:
 * programs each backend's runner drives); test/contract/webhooks-store-contract.ts runs both.
 *
 * Nothing here is on the request path: the management routes and the dispatcher await it. Emitters whose
 * state lives in an instance's SQLite file keep the synchronous outbox of core/webhooks/outbox.ts; with
 * PostgreSQL their events are relayed into `appendEvents` (webhook-system.ts).
 */
import type { DeliveryRecord, DeliveryResult, DueDelivery, Page, WebhookEndpointRecord, WebhookPatch } from '../webhooks/delivery.js';

/** Every method as the webhook manager needs it, asynchronous. */
export interface WebhookEndpointsStore {
  /** Inserts unless the project already has `max` endpoints (checked in the same transaction). */
  insertCapped(record: WebhookEndpointRecord, secret: string, max: number): Promise<boolean>;
  get(projectId: string, id: string): Promise<WebhookEndpointRecord | null>;
  /** The signing secret in clear; null when it cannot be opened. */
  secret(projectId: string, id: string): Promise<string | null>;
  /** Newest first; null when `after` names no endpoint of the project. */
  list(projectId: string, limit: number, after: string | null): Promise<Page<WebhookEndpointRecord> | null>;
  update(projectId: string, id: string, patch: WebhookPatch, now: number): Promise<WebhookEndpointRecord | null>;
  /** Deletes the endpoint, its delivery records and the events no other endpoint still needs. */
  delete(projectId: string, id: string): Promise<boolean>;
  /** Newest first; null when `after` names no delivery of the endpoint. */
  deliveries(webhookId: string, limit: number, after: string | null): Promise<Page<DeliveryRecord> | null>;
  /**
   * Puts a delivery of the endpoint back in the queue, due at `now`, whatever its state (an attempt in
   * flight keeps its claim). False when the endpoint has no such delivery.
   */
  redeliver(webhookId: string, deliveryId: string, now: number): Promise<boolean>;
}

/** The dispatcher's store (core/webhooks/dispatcher.ts `DispatchStore`), every call a round trip. */
export interface WebhookDeliveryQueue {
  releaseAbandoned(): Promise<number>;
  renewClaims(): Promise<number>;
  claimDue(now: number, limit: number, skipWebhooks: readonly string[], pick: (candidates: DueDelivery[]) => DueDelivery[]): Promise<{ claimed: DueDelivery[]; seen: number }>;
  claimDueFor(webhookId: string, now: number, limit: number): Promise<DueDelivery[]>;
  recordResults(results: readonly DeliveryResult[], now: number): Promise<void>;
}

/** An event with its body already serialized (every attempt to every subscriber sends these bytes). */
export interface OutboxEvent {
  /** `evt_<24 hex>`: idempotency key of the append. */
  readonly id: string;
  readonly projectId: string;
  readonly type: string;
  readonly body: string;
  /** Unix ms */
  readonly createdAt: number;
}

/** Who claims deliveries: this instance, and how long a claim holds without renewal. */
export interface DeliveryClaimant {
  readonly instanceId: string;
  readonly leaseMs: number;
  /** Wall clock for the lease (never the injectable test clock the due times use); Date.now unless a test sets it. */
  readonly wallClock?: () => number;
}

export interface WebhookRetentionResult {
  readonly deliveries: number;
  readonly events: number;
}

export interface WebhooksStore {
  readonly endpoints: WebhookEndpointsStore;
  /** The delivery queue as worked by `claimant`. */
  deliveryQueue(claimant: DeliveryClaimant): WebhookDeliveryQueue;
  /**
   * Stores each event and one pending delivery per active endpoint of its project subscribed to its
   * type, in one transaction. An event whose id is already stored is skipped whole (a relay may append
   * the same event twice; it is fanned out once). Returns the deliveries queued.
   */
  appendEvents(events: readonly OutboxEvent[]): Promise<number>;
  /** Deletes finished deliveries and unneeded events older than `now - retentionMs`, in small batches. */
  prune(now: number, retentionMs: number): Promise<WebhookRetentionResult>;
}
