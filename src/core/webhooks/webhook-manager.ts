/**
 * The webhook management use cases behind `/{project}/v1/webhooks...` (SPEC "Webhooks"): the routes parse
 * and shape, this decides. URL policy, the per-project cap (SPEC Limits: 20 endpoints), and the test
 * delivery (one synchronous attempt, never retried or recorded, 10 per webhook per hour for the deployment:
 * test-limiter.ts).
 */
import { GatewayError } from '../../errors.js';
import type { ThrottlePort } from '../coordination/throttle-port.js';
import type { WebhookEndpointsStore } from '../store/webhooks-store.js';
import type { AttemptOutcome, DeliveryRecord, Page, WebhookAttempt, WebhookEndpointRecord, WebhookPatch } from './delivery.js';
import { envelopeBody } from './envelope.js';
import { TEST_EVENT_TYPE } from './event-types.js';
import { createTestDeliveryLimiter } from './test-limiter.js';

export const MAX_WEBHOOKS_PER_PROJECT = 20;

/** The endpoints' storage port (core/store/webhooks-store.ts): SQLite or PostgreSQL. */
export type WebhookStore = WebhookEndpointsStore;

export interface WebhookIds {
  webhookId(): string;
  eventId(): string;
  deliveryId(): string;
  secret(): string;
}

export interface WebhookManagerDeps {
  readonly store: WebhookStore;
  readonly ids: WebhookIds;
  /** The outbound guard: ok, or why the URL is refused ("must use https", "must not target ..."). */
  checkUrl(url: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  sign(items: readonly { secret: string; timestamp: number; body: string }[]): Promise<string[]>;
  send(attempt: WebhookAttempt): Promise<AttemptOutcome>;
  now(): number;
  /** Where the test deliveries are counted: the deployment's throttle counters (test-limiter.ts). */
  readonly throttles: ThrottlePort;
}

export interface NewWebhook {
  readonly url: string;
  readonly events: readonly string[];
  readonly description?: string | null | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

export interface TestResult {
  readonly success: boolean;
  readonly http_status: number | null;
  readonly response_body: string | null;
  readonly error_message: string | null;
}

export function createWebhookManager(deps: WebhookManagerDeps) {
  const testLimiter = createTestDeliveryLimiter(deps.throttles);

  async function requireAllowedUrl(url: string): Promise<void> {
    const check = await deps.checkUrl(url);
    if (!check.ok) throw new GatewayError('url_not_allowed', { param: 'url', message: `url ${check.reason}.` });
  }

  const notFound = (projectId: string, id: string): GatewayError =>
    new GatewayError('webhook_not_found', { message: `Project ${projectId} has no webhook endpoint ${JSON.stringify(id)}.` });

  async function requireWebhook(projectId: string, id: string): Promise<WebhookEndpointRecord> {
    const found = await deps.store.get(projectId, id);
    if (!found) throw notFound(projectId, id);
    return found;
  }

  return {
    async create(projectId: string, input: NewWebhook): Promise<{ record: WebhookEndpointRecord; secret: string }> {
      await requireAllowedUrl(input.url);
      const now = deps.now();
      const record: WebhookEndpointRecord = {
        id: deps.ids.webhookId(),
        projectId,
        url: input.url,
        description: input.description ?? null,
        events: input.events,
        isActive: true,
        metadata: input.metadata ?? {},
        createdAt: now,
        updatedAt: now,
      };
      const secret = deps.ids.secret();
      if (!(await deps.store.insertCapped(record, secret, MAX_WEBHOOKS_PER_PROJECT))) {
        throw new GatewayError('webhook_limit_reached', {
          message: `A project may have at most ${MAX_WEBHOOKS_PER_PROJECT} webhook endpoints; delete one first.`,
        });
      }
      return { record, secret };
    },

    get: requireWebhook,

    async list(projectId: string, limit: number, after: string | null): Promise<Page<WebhookEndpointRecord>> {
      const page = await deps.store.list(projectId, limit, after);
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no webhook endpoint of this project: ${JSON.stringify(after)}.` });
      return page;
    },

    async update(projectId: string, id: string, patch: WebhookPatch): Promise<WebhookEndpointRecord> {
      const current = await requireWebhook(projectId, id);
      if (Object.keys(patch).length === 0) return current;
      if (patch.url !== undefined) await requireAllowedUrl(patch.url);
      const updated = await deps.store.update(projectId, id, patch, deps.now());
      // Deleted while the URL was being checked.
      if (!updated) throw notFound(projectId, id);
      return updated;
    },

    async delete(projectId: string, id: string): Promise<void> {
      if (!(await deps.store.delete(projectId, id))) throw notFound(projectId, id);
    },

    async deliveries(projectId: string, id: string, limit: number, after: string | null): Promise<Page<DeliveryRecord>> {
      await requireWebhook(projectId, id);
      const page = await deps.store.deliveries(id, limit, after);
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no delivery of this webhook endpoint: ${JSON.stringify(after)}.` });
      return page;
    },

    /** SPEC: a synthetic delivery, sent now (even to an inactive endpoint: the operator asked for it). */
    async test(projectId: string, id: string): Promise<TestResult> {
      const webhook = await requireWebhook(projectId, id);
      const now = deps.now();
      await testLimiter.admit(webhook.id, now);
      const secret = await deps.store.secret(projectId, id);
      if (secret === null) {
        return { success: false, http_status: null, response_body: null, error_message: 'the signing secret cannot be read (was the secret key changed?)' };
      }
      const eventId = deps.ids.eventId();
      const body = envelopeBody(eventId, TEST_EVENT_TYPE, now, {
        webhook_id: webhook.id,
        message: 'A test delivery from Switchboard. Verify its signature as you would any other event.',
      });
      const timestamp = Math.floor(now / 1000);
      const [signature = ''] = await deps.sign([{ secret, timestamp, body }]);
      const outcome = await deps.send({ url: webhook.url, deliveryId: deps.ids.deliveryId(), timestamp, signature, body });
      return {
        success: outcome.ok,
        http_status: outcome.httpStatus,
        response_body: outcome.responseBody,
        error_message: outcome.ok ? null : outcome.errorMessage,
      };
    },
  };
}

export type WebhookManager = ReturnType<typeof createWebhookManager>;
