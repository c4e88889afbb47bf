/**
 * `/{project}/v1/webhooks...` (SPEC "Webhooks"): create, list, get, update (PUT), delete, test, deliveries.
 * Management scope (docs/decisions.md), bodies capped at SPEC's 16 KiB management limit. Resources carry
 * exactly SPEC's fields; `secret` only in the create response. Times are Unix seconds on the wire.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { DeliveryRecord, WebhookEndpointRecord, WebhookPatch } from '../core/webhooks/delivery.js';
import type { WebhookManager } from '../core/webhooks/webhook-manager.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseCreateWebhook, parsePageQuery, parseUpdateWebhook, type UpdateWebhookBody } from '../schemas/webhooks.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

export interface WebhookServices extends Services {
  readonly webhooks: WebhookManager;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

export function webhookEndpointWire(w: WebhookEndpointRecord, secret?: string) {
  return {
    id: w.id,
    object: 'webhook_endpoint' as const,
    url: w.url,
    description: w.description,
    ...(secret === undefined ? {} : { secret }),
    events: w.events,
    is_active: w.isActive,
    metadata: w.metadata,
    created_at: seconds(w.createdAt),
    updated_at: seconds(w.updatedAt),
  };
}

/** `sending` (an attempt in flight) reads as `pending`: its outcome is not known yet. */
export function webhookDeliveryWire(d: DeliveryRecord) {
  return {
    id: d.id,
    object: 'webhook_delivery' as const,
    event_type: d.eventType,
    http_status: d.httpStatus,
    response_body: d.responseBody,
    status: d.state === 'sending' ? 'pending' : d.state,
    attempt_count: d.attemptCount,
    created_at: seconds(d.createdAt),
  };
}

function toPatch(body: UpdateWebhookBody): WebhookPatch {
  const patch: { -readonly [K in keyof WebhookPatch]: WebhookPatch[K] } = {};
  if (body.url !== undefined) patch.url = body.url;
  if (body.events !== undefined) patch.events = body.events;
  if (body.description !== undefined) patch.description = body.description;
  if (body.is_active !== undefined) patch.isActive = body.is_active;
  if (body.metadata !== undefined) patch.metadata = body.metadata;
  return patch;
}

export function webhooksRoutes(services: WebhookServices): RouteDef[] {
  const { webhooks } = services;
  const id = (ctx: RouteContext): string => ctx.req.params.webhook ?? '';
  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, auth: AuthenticatedKey) => Promise<void> | void): RouteDef =>
    keyed(services, 'management', { method, pattern: `/:project/v1/webhooks${pattern}`, family: 'webhooks', bodyLimit: MANAGEMENT_BODY_LIMIT, handle });

  return [
    route('POST', '', async (ctx, auth) => {
      const projectId = auth.project.id;
      const body = parseCreateWebhook(await ctx.req.json());
      const { record, secret } = await webhooks.create(projectId, body);
      ctx.reply.json(201, webhookEndpointWire(record, secret));
    }),
    route('GET', '', async (ctx, auth) => {
      const projectId = auth.project.id;
      const { limit, after } = parsePageQuery(ctx.req.searchParams());
      const page = await webhooks.list(projectId, limit, after);
      ctx.reply.json(200, { object: 'list', data: page.items.map((w) => webhookEndpointWire(w)), has_more: page.hasMore });
    }),
    route('GET', '/:webhook', async (ctx, auth) => {
      const webhookId = id(ctx);
      ctx.reply.json(200, webhookEndpointWire(await webhooks.get(auth.project.id, webhookId)));
    }),
    route('PUT', '/:webhook', async (ctx, auth) => {
      const projectId = auth.project.id;
      const body = parseUpdateWebhook(await ctx.req.json());
      ctx.reply.json(200, webhookEndpointWire(await webhooks.update(projectId, id(ctx), toPatch(body))));
    }),
    route('DELETE', '/:webhook', async (ctx, auth) => {
      const projectId = auth.project.id;
      await ctx.req.body();
      await webhooks.delete(projectId, id(ctx));
      ctx.reply.json(200, { id: id(ctx), object: 'webhook_endpoint', deleted: true });
    }),
    route('POST', '/:webhook/test', async (ctx, auth) => {
      const projectId = auth.project.id;
      await ctx.req.body();
      ctx.reply.json(200, await webhooks.test(projectId, id(ctx)));
    }),
    route('GET', '/:webhook/deliveries', async (ctx, auth) => {
      const projectId = auth.project.id;
      const { limit, after } = parsePageQuery(ctx.req.searchParams());
      const page = await webhooks.deliveries(projectId, id(ctx), limit, after);
      ctx.reply.json(200, { object: 'list', data: page.items.map(webhookDeliveryWire), has_more: page.hasMore });
    }),
  ];
}
