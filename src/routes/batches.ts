/**
 * The Batch API (issue 14, OpenAI's shapes, docs/decisions.md "Batches"): POST /{project}/v1/batches,
 * GET /{project}/v1/batches (limit, after), GET /{project}/v1/batches/{id}, POST .../{id}/cancel.
 * Control-plane routes (SPEC Limits: 60 requests a minute per project); the key needs `inference`, the
 * scope its lines run under. The lines themselves run in the background (batches/batch-system.ts).
 */
import { z } from 'zod';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { BATCH_ENDPOINTS } from '../core/batches/batch-lines.js';
import { COMPLETION_WINDOWS } from '../core/batches/batch-machine.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { metadataField } from '../schemas/fields.js';
import { parseStrictBody } from '../schemas/issues.js';
import type { BatchFiles, BatchSystem } from '../batches/batch-system.js';
import { newBatchId } from '../batches/batch-object.js';
import type { BatchesStore, BatchRow } from '../core/store/batches-store.js';
import { keyed, MANAGEMENT_BODY_LIMIT, namedWorkspace } from './guard.js';
import type { Services } from '../app/services.js';

export interface BatchServices extends Services {
  readonly batches: BatchSystem;
  readonly batchesRepo: BatchesStore;
  readonly batchFiles: Pick<BatchFiles, 'purposeOf'>;
}

const FIELDS = ['input_file_id', 'endpoint', 'completion_window', 'metadata', 'output_expires_after'];

const createSchema = z.strictObject({
  input_file_id: z.string().min(1),
  endpoint: z.enum(BATCH_ENDPOINTS as unknown as [string, ...string[]]),
  completion_window: z.enum(Object.keys(COMPLETION_WINDOWS) as [string, ...string[]]),
  // SPEC "Other limits" (as OpenAI's): up to 16 pairs, keys up to 64 characters, values up to 512.
  metadata: metadataField().nullable().optional(),
  // Accepted for SDK compatibility; output files here are kept like any other file (no expiry).
  output_expires_after: z.unknown().optional(),
});

async function batchOf(services: BatchServices, projectId: string, id: string): Promise<BatchRow> {
  const row = await services.batchesRepo.get(id);
  if (!row || row.project_id !== projectId) throw new GatewayError('not_found', { message: `Project ${projectId} has no batch ${JSON.stringify(id)}.` });
  return row;
}

async function create(services: BatchServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const input = parseStrictBody(createSchema, parseJsonBody(await ctx.req.body()), FIELDS, { mapping: { opaque: new Set(['metadata']) } });
  const projectId = auth.project.id;
  const purpose = await services.batchFiles.purposeOf(projectId, input.input_file_id);
  if (purpose === null) throw new GatewayError('invalid_request', { param: 'input_file_id', message: `Project ${projectId} has no file ${JSON.stringify(input.input_file_id)}.` });
  if (purpose !== 'batch') throw new GatewayError('invalid_request', { param: 'input_file_id', message: `File ${input.input_file_id} has purpose ${purpose}; a batch's input file needs purpose batch.` });
  const { named, namedBy } = namedWorkspace(ctx.req);
  const now = services.now();
  const id = newBatchId();
  await services.batchesRepo.insert({
    id,
    project_id: projectId,
    key_id: auth.key.id,
    workspace_named: named,
    workspace_named_by: namedBy,
    endpoint: input.endpoint,
    input_file_id: input.input_file_id,
    completion_window: input.completion_window,
    metadata: input.metadata ? JSON.stringify(input.metadata) : null,
    created_at: now,
    expires_at: now + (COMPLETION_WINDOWS[input.completion_window] ?? 0),
  });
  services.batches.created(id);
  ctx.reply.json(200, await services.batches.objectOf(await batchOf(services, projectId, id)));
}

async function list(services: BatchServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const query = ctx.req.searchParams();
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? 20 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be an integer from 1 to 100; got ${JSON.stringify((rawLimit ?? '').slice(0, 40))}.` });
  }
  const after = query.get('after');
  // As every other list's cursor (files, input items, conversation items, webhooks): 400 naming `after`.
  const row = after === null ? null : await services.batchesRepo.get(after);
  if (after !== null && (!row || row.project_id !== auth.project.id)) {
    throw new GatewayError('invalid_query', { param: 'after', message: `after names no batch of this project: ${JSON.stringify(after)}.` });
  }
  const cursor = row === null ? Infinity : row.seq;
  const rows = await services.batchesRepo.page(auth.project.id, cursor, limit + 1);
  const data = await Promise.all(rows.slice(0, limit).map((r) => services.batches.objectOf(r)));
  ctx.reply.json(200, { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit });
}

export function batchesRoutes(services: BatchServices): RouteDef[] {
  const family = 'batches';
  return [
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/v1/batches', family, bodyLimit: MANAGEMENT_BODY_LIMIT, handle: (ctx, auth) => create(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'GET', pattern: '/:project/v1/batches', family, handle: (ctx, auth) => list(services, ctx, auth) }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/batches/:batch',
      family,
      handle: async (ctx, auth) => {
        ctx.reply.json(200, await services.batches.objectOf(await batchOf(services, auth.project.id, ctx.req.params.batch ?? '')));
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/batches/:batch/cancel',
      family,
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle: async (ctx, auth) => {
        await ctx.req.body();
        const row = await batchOf(services, auth.project.id, ctx.req.params.batch ?? '');
        if (!(await services.batches.cancel(row.id)) && row.status !== 'cancelling') {
          throw new GatewayError('invalid_state', { message: `Batch ${row.id} is ${row.status}; only a validating or in_progress batch can be cancelled.` });
        }
        ctx.reply.json(200, await services.batches.objectOf(await batchOf(services, auth.project.id, row.id)));
      },
    }),
  ];
}
