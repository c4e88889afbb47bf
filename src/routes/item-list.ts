/**
 * The cursor lists of the Responses and Conversations APIs (`input_items`, conversation `items`):
 * `limit` 1-100 (default 20), `order` asc or desc (default desc, as OpenAI), `after` an item id; the page
 * is `{object: "list", data, first_id, last_id, has_more}`.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';

export interface ListQuery {
  readonly limit: number;
  readonly after: string | null;
  readonly order: 'asc' | 'desc';
}

export function parseListQuery(req: IncomingRequest): ListQuery {
  const q = req.searchParams();
  const rawLimit = q.get('limit');
  let limit = 20;
  if (rawLimit !== null) {
    limit = Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be an integer from 1 to 100; got ${JSON.stringify(rawLimit.slice(0, 40))}.` });
    }
  }
  const order = q.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new GatewayError('invalid_query', { param: 'order', message: `order must be asc or desc; got ${JSON.stringify(order.slice(0, 40))}.` });
  return { limit, after: q.get('after'), order };
}

export function listPage(data: readonly Record<string, unknown>[], hasMore: boolean): Record<string, unknown> {
  const first = data[0];
  const last = data[data.length - 1];
  return { object: 'list', data, first_id: first ? first.id : null, last_id: last ? last.id : null, has_more: hasMore };
}

/**
 * Stored responses and conversations belong to the workspace they were made in: a key confined to a list
 * of workspaces reaches only those; a record of no workspace only a key with no list (SPEC Authentication).
 * Unreachable reads as absent (404), so ids in other workspaces are not disclosed.
 */
export function reaches(auth: AuthenticatedKey, workspaceId: string | null): boolean {
  const allowed = auth.key.allowedWorkspaceIds;
  if (workspaceId === null) return allowed === null && auth.key.userId === null;
  return allowed === null || allowed.includes(workspaceId);
}
