/**
 * Uploads API (issue 14; OpenAI shapes): a file larger than one request, sent as parts. POST
 * /{project}/v1/uploads ({filename, purpose, bytes, mime_type}), .../parts (multipart `data`, streamed into
 * the store), .../complete ({part_ids, md5?}: the parts in that order become a file, `file.uploaded`),
 * .../cancel. An upload expires an hour after creation (injected clock). Control-plane counter, scope
 * `inference` like files.
 */
import { fileObject, partObject, uploadObject, type UploadMeta } from '../core/files/file-objects.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseCompleteUpload, parseCreateUpload } from '../schemas/files.js';
import { FilesRefusal } from '../core/store/files-store.js';
import { filesError, receiveFile } from './file-multipart.js';
import { MULTIPART_SLACK, type FilesServices } from './files.js';
import { keyed } from './guard.js';

/** `part_ids` of up to 10,000 parts. */
const JSON_BODY_LIMIT = 1024 * 1024;

function refusal(err: unknown): unknown {
  if (!(err instanceof FilesRefusal)) return filesError(err);
  switch (err.reason) {
    case 'not_pending':
      return new GatewayError('invalid_state', { message: err.message });
    case 'bad_parts':
      return new GatewayError('invalid_request', { param: 'part_ids', message: err.message });
    case 'byte_mismatch':
      return new GatewayError('invalid_request', { param: 'part_ids', message: err.message });
    case 'md5_mismatch':
      return new GatewayError('invalid_request', { param: 'md5', message: err.message });
    case 'too_large':
      return filesError(err);
  }
}

export function uploadsRoutes(services: FilesServices): RouteDef[] {
  const { files } = services;
  const config = services.filesConfig;

  const uploadOf = async (ctx: RouteContext, projectId: string): Promise<UploadMeta> => {
    const id = ctx.req.params.upload ?? '';
    const upload = await files.getUpload(projectId, id);
    if (!upload) throw new GatewayError('upload_not_found', { param: 'upload_id', message: `No upload ${JSON.stringify(id.slice(0, 80))} in this project.` });
    return upload;
  };
  const render = async (upload: UploadMeta): Promise<Record<string, unknown>> =>
    uploadObject(upload, services.now(), upload.fileId === null ? null : await files.get(upload.projectId, upload.fileId));

  return [
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/uploads',
      family: 'uploads',
      bodyLimit: JSON_BODY_LIMIT,
      handle: async (ctx, auth) => {
        const body = parseCreateUpload(await ctx.req.json(), config.max_upload_bytes);
        ctx.reply.json(200, await render(await files.createUpload(auth.project.id, body)));
        // Expired uploads' parts go when the next upload begins: no timer on the injected clock needed.
        files.sweepExpired().catch((err: unknown) => services.logger.error({ err }, 'expired uploads sweep failed'));
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/uploads/:upload/parts',
      family: 'uploads',
      streamBody: true,
      bodyLimit: config.max_part_bytes + MULTIPART_SLACK,
      handle: async (ctx, auth) => {
        const upload = await uploadOf(ctx, auth.project.id);
        const status = uploadObject(upload, services.now(), null).status;
        if (status !== 'pending') throw new GatewayError('invalid_state', { message: `Upload ${upload.id} is ${String(status)}; parts are accepted while it is pending.` });
        const source = ctx.req.bodyStream();
        if (!source) throw new GatewayError('internal_error');
        const got = await receiveFile(files, source, ctx.req.header('content-type'), 'data', config.max_part_bytes);
        // As for files: a client gone once its body was in would never learn the part's id.
        if (ctx.req.aborted) {
          void files.discard(got.staged).catch(() => undefined);
          return;
        }
        try {
          ctx.reply.json(200, partObject(await files.addPart(auth.project.id, upload, got.staged)));
        } catch (err) {
          void files.discard(got.staged).catch(() => undefined);
          throw refusal(err);
        }
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/uploads/:upload/complete',
      family: 'uploads',
      bodyLimit: JSON_BODY_LIMIT,
      handle: async (ctx, auth) => {
        const upload = await uploadOf(ctx, auth.project.id);
        const body = parseCompleteUpload(await ctx.req.json());
        try {
          const done = await files.complete(auth.project.id, upload, body.partIds, body.md5);
          ctx.reply.json(200, { ...uploadObject(done.upload, services.now(), done.file), file: fileObject(done.file) });
        } catch (err) {
          throw refusal(err);
        }
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/uploads/:upload/cancel',
      family: 'uploads',
      bodyLimit: JSON_BODY_LIMIT,
      handle: async (ctx, auth) => {
        const upload = await uploadOf(ctx, auth.project.id);
        await ctx.req.body();
        try {
          ctx.reply.json(200, await render(await files.cancel(auth.project.id, upload)));
        } catch (err) {
          throw refusal(err);
        }
      },
    }),
  ];
}
