/**
 * The Conversations API (issue 14; OpenAI's shapes, for `client.conversations.*`):
 *   POST /{project}/v1/conversations                      create (items?, metadata?)
 *   GET | POST | DELETE /{project}/v1/conversations/{id}  retrieve, update metadata, delete
 *   GET | POST /{project}/v1/conversations/{id}/items     list (limit, after, order), add
 *   GET | DELETE /{project}/v1/conversations/{id}/items/{item}
 * and the same under the endpoint and router base URLs, where Responses can name conversations too
 * (guard.ts RESPONSES_BASES).
 * Control-plane routes (SPEC Limits); adding items draws from its own counter (limitClassOf).
 */
import { resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import { canonicalItems } from '../core/responses/input-items.js';
import type { ConversationRecord, StoredConversations } from '../core/store/responses-store.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import { newRequestId } from '../http/request-id.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseConversationCreate, parseConversationUpdate, parseItemsCreate } from '../schemas/responses-request.js';
import { checkBaseEndpoint, keyed, MANAGEMENT_BODY_LIMIT, namedWorkspace, RESPONSES_BASES } from './guard.js';
import { listPage, parseListQuery, reaches } from './item-list.js';
import type { Services } from '../app/services.js';

/** OpenAI adds at most 20 items per request (create or items.create). */
export const MAX_ITEMS_PER_REQUEST = 20;

export interface ConversationsServices extends Services {
  readonly conversations: StoredConversations;
}

function conversationObject(c: ConversationRecord): Record<string, unknown> {
  return { id: c.id, object: 'conversation', created_at: Math.floor(c.createdAt / 1000), metadata: c.metadata };
}

async function jsonBody(ctx: RouteContext): Promise<unknown> {
  const raw = await ctx.req.body();
  return raw.length === 0 ? {} : parseJsonBody(raw);
}

function checkItemCount(count: number): void {
  if (count > MAX_ITEMS_PER_REQUEST) {
    throw new GatewayError('invalid_request', { param: 'items', message: `items holds ${count} items; at most ${MAX_ITEMS_PER_REQUEST} may be added per request.` });
  }
}

export function conversationsRoutes(services: ConversationsServices): RouteDef[] {
  const repo = services.conversations;
  const find = async (ctx: RouteContext, auth: AuthenticatedKey): Promise<ConversationRecord> => {
    const id = ctx.req.params.conversation ?? '';
    const found = await repo.get(auth.project.id, id);
    if (!found || !reaches(auth, found.workspaceId)) throw new GatewayError('conversation_not_found', { message: `No conversation ${JSON.stringify(id)} in this project.` });
    return found;
  };
  /**
   * The workspace the request runs in; refused when it keeps no data (SPEC zero data retention): what a
   * request stores in a conversation is its own, whichever workspace the conversation was made in.
   */
  const retainingWorkspace = (ctx: RouteContext, auth: AuthenticatedKey, what: string): string | null => {
    const { named, namedBy } = namedWorkspace(ctx.req);
    // On an endpoint base URL the conversation runs where that endpoint's responses would.
    const slug = ctx.req.params.endpoint;
    const endpoint = (slug === undefined ? null : services.catalog.endpoint(auth.project.id, slug)) ?? undefined;
    const workspaceId = resolveWorkspace(auth.key, auth.project, { named, namedBy, workspaces: services.catalog.workspaces(auth.project.id), workspaceProject: services.catalog.workspaceProject, endpoint });
    if (workspaceId !== null && services.catalog.workspaces(auth.project.id).get(workspaceId)?.zeroDataRetention) {
      throw new GatewayError('retention_not_permitted', { message: `${what}, which a zero-data-retention workspace does not permit.` });
    }
    return workspaceId;
  };
  const route = (method: RouteDef['method'], path: string, handle: (ctx: RouteContext, auth: AuthenticatedKey, body: unknown) => Promise<void>): RouteDef[] =>
    RESPONSES_BASES.map((base) =>
      keyed(services, 'inference', {
        method,
        pattern: `${base}${path}`,
        family: 'conversations',
        bodyLimit: MANAGEMENT_BODY_LIMIT * 4,
        handle: async (ctx, auth) => {
          const body = await jsonBody(ctx);
          checkBaseEndpoint(ctx.req, services, auth);
          await handle(ctx, auth, body);
        },
      }),
    );
  return [
    ...route('POST', '/conversations', async (ctx, auth, body) => {
      const request = parseConversationCreate(body);
      const workspaceId = retainingWorkspace(ctx, auth, 'A conversation stores its items');
      const items = canonicalItems(request.items ?? [], 'items', newRequestId);
      checkItemCount(items.length);
      const conversation: ConversationRecord = { id: newRequestId('conv_'), projectId: auth.project.id, workspaceId, metadata: request.metadata ?? {}, createdAt: services.now() };
      await repo.create(conversation, items);
      ctx.reply.json(200, conversationObject(conversation));
    }),
    ...route('GET', '/conversations/:conversation', async (ctx, auth) => ctx.reply.json(200, conversationObject(await find(ctx, auth)))),
    ...route('POST', '/conversations/:conversation', async (ctx, auth, body) => {
      const found = await find(ctx, auth);
      const { metadata } = parseConversationUpdate(body);
      await repo.updateMetadata(auth.project.id, found.id, metadata);
      ctx.reply.json(200, conversationObject({ ...found, metadata }));
    }),
    ...route('DELETE', '/conversations/:conversation', async (ctx, auth) => {
      const found = await find(ctx, auth);
      await repo.delete(auth.project.id, found.id);
      ctx.reply.json(200, { id: found.id, object: 'conversation.deleted', deleted: true });
    }),
    ...route('GET', '/conversations/:conversation/items', async (ctx, auth) => {
      const found = await find(ctx, auth);
      const query = parseListQuery(ctx.req);
      const page = await repo.listItems(found.id, query);
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no item of this conversation: ${JSON.stringify(query.after)}.` });
      ctx.reply.json(200, listPage(page.items, page.hasMore));
    }),
    ...route('POST', '/conversations/:conversation/items', async (ctx, auth, body) => {
      retainingWorkspace(ctx, auth, 'Adding items stores them in the conversation');
      const found = await find(ctx, auth);
      const items = canonicalItems(parseItemsCreate(body).items, 'items', newRequestId);
      checkItemCount(items.length);
      await repo.addItems(found.id, items, services.now());
      ctx.reply.json(200, listPage(items, false));
    }),
    ...route('GET', '/conversations/:conversation/items/:item', async (ctx, auth) => {
      const found = await find(ctx, auth);
      const item = await repo.getItem(found.id, ctx.req.params.item ?? '');
      if (!item) throw new GatewayError('conversation_item_not_found', { message: `Conversation ${found.id} has no item ${JSON.stringify(ctx.req.params.item ?? '')}.` });
      ctx.reply.json(200, item);
    }),
    ...route('DELETE', '/conversations/:conversation/items/:item', async (ctx, auth) => {
      const found = await find(ctx, auth);
      if (!(await repo.deleteItem(found.id, ctx.req.params.item ?? ''))) {
        throw new GatewayError('conversation_item_not_found', { message: `Conversation ${found.id} has no item ${JSON.stringify(ctx.req.params.item ?? '')}.` });
      }
      ctx.reply.json(200, conversationObject(found));
    }),
  ];
}
