/**
 * The routes of a stored response (issue 14): GET (with `?stream=true` for a streamed background
 * response's events), DELETE, POST .../cancel (background responses, docs/decisions.md "Background
 * responses and upstream Responses API") and GET .../input_items, under every base URL a response can be
 * created on (guard.ts RESPONSES_BASES).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { StoredResponse } from '../core/store/responses-store.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { checkBaseEndpoint, keyed, RESPONSES_BASES } from './guard.js';
import { listPage, parseListQuery, reaches } from './item-list.js';
import { KEPT_STREAMS, type BackgroundResponses } from '../app/responses/background-responses.js';
import { followRun } from './responses-follow.js';
import type { ResponsesServices } from './responses.js';

async function storedResponse(ctx: RouteContext, services: ResponsesServices, auth: AuthenticatedKey): Promise<StoredResponse> {
  const id = ctx.req.params.response ?? '';
  const stored = await services.responses.get(auth.project.id, id);
  if (!stored || !reaches(auth, stored.workspaceId)) throw new GatewayError('response_not_found', { message: `No stored response ${JSON.stringify(id)} in this project.` });
  return stored;
}

/** `GET .../{id}?stream=true[&starting_after=N]`: the events of a streamed background response. */
function streamQuery(req: IncomingRequest): { stream: boolean; startingAfter: number } {
  const query = req.searchParams();
  const stream = query.get('stream');
  if (stream !== null && stream !== 'true' && stream !== 'false') throw new GatewayError('invalid_query', { param: 'stream', message: 'stream must be true or false.' });
  const after = query.get('starting_after');
  if (after !== null && !/^\d{1,9}$/.test(after)) throw new GatewayError('invalid_query', { param: 'starting_after', message: 'starting_after must be a non-negative integer (a sequence_number).' });
  return { stream: stream === 'true', startingAfter: after === null ? -1 : Number(after) };
}

async function retrieve(ctx: RouteContext, services: ResponsesServices, background: BackgroundResponses, auth: AuthenticatedKey): Promise<void> {
  const { stream, startingAfter } = streamQuery(ctx.req);
  const stored = await storedResponse(ctx, services, auth);
  if (!stream) return ctx.reply.json(200, stored.body);
  const run = background.find(stored.id);
  if (!run) {
    throw new GatewayError('invalid_request', {
      param: 'stream',
      message: `Only a background response created with stream: true can be streamed, while the gateway keeps its events (the last ${KEPT_STREAMS} finished ones, until a restart); retrieve it without stream.`,
    });
  }
  return followRun(run, ctx.req, ctx.reply, startingAfter);
}

const RUNNING: ReadonlySet<string> = new Set(['queued', 'in_progress']);

/** OpenAI's rules: only background responses; a cancelled one again answers as it is; a finished one is refused. */
async function cancel(ctx: RouteContext, services: ResponsesServices, background: BackgroundResponses, auth: AuthenticatedKey): Promise<void> {
  const stored = await storedResponse(ctx, services, auth);
  if (stored.body.background !== true) throw new GatewayError('invalid_request', { message: 'Cannot cancel a synchronous response: only responses created with background: true can be cancelled.' });
  if (stored.status === 'cancelled') return ctx.reply.json(200, stored.body);
  const body = { ...stored.body, status: 'cancelled' };
  if (!RUNNING.has(stored.status) || !(await services.responses.transition(auth.project.id, stored.id, 'cancelled', body))) {
    const now = (await services.responses.get(auth.project.id, stored.id))?.status ?? stored.status;
    throw new GatewayError('invalid_request', { message: `Cannot cancel a response that is already ${now}; only a queued or in-progress background response can be cancelled.` });
  }
  // The row says cancelled first, so the turn's own end (aborted, or an answer racing in) changes nothing.
  background.cancel(stored.id);
  ctx.reply.json(200, body);
}

export function storedResponseRoutes(services: ResponsesServices, background: BackgroundResponses): RouteDef[] {
  const route = (method: RouteDef['method'], path: string, handle: (ctx: RouteContext, auth: AuthenticatedKey) => Promise<void> | void): RouteDef[] =>
    RESPONSES_BASES.map((base) =>
      keyed(services, 'inference', {
        method,
        pattern: `${base}${path}`,
        family: 'responses',
        handle: async (ctx, auth) => {
          await ctx.req.body();
          checkBaseEndpoint(ctx.req, services, auth);
          await handle(ctx, auth);
        },
      }),
    );
  return [
    ...route('GET', '/responses/:response', (ctx, auth) => retrieve(ctx, services, background, auth)),
    ...route('DELETE', '/responses/:response', async (ctx, auth) => {
      const { id } = await storedResponse(ctx, services, auth);
      // A running background response is stopped first: nothing would be left to finish.
      background.cancel(id);
      await services.responses.delete(auth.project.id, id);
      ctx.reply.json(200, { id, object: 'response.deleted', deleted: true });
    }),
    ...route('POST', '/responses/:response/cancel', (ctx, auth) => cancel(ctx, services, background, auth)),
    ...route('GET', '/responses/:response/input_items', async (ctx, auth) => {
      const { input } = await storedResponse(ctx, services, auth);
      const query = parseListQuery(ctx.req);
      const ordered = query.order === 'asc' ? input : [...input].reverse();
      let start = 0;
      if (query.after !== null) {
        start = ordered.findIndex((item) => item.id === query.after) + 1;
        if (start === 0) throw new GatewayError('invalid_query', { param: 'after', message: `after names no input item of this response: ${JSON.stringify(query.after)}.` });
      }
      const page = ordered.slice(start, start + query.limit);
      ctx.reply.json(200, listPage(page, start + query.limit < ordered.length));
    }),
  ];
}
