/**
 * Files API (issue 14; OpenAI shapes so the official client works unchanged): POST /{project}/v1/files
 * (multipart `file` + `purpose`, streamed into the store), list, retrieve, delete, and GET .../content streamed
 * back under backpressure. Scope `inference` (docs/decisions.md "Scopes per family"); POST and content
 * draw from the `files` counter, the rest from the control-plane one (core/limits/rate-limiter.ts).
 */
import type { Readable } from 'node:stream';
import type { FilesConfig } from '../config.js';
import { fileObject } from '../core/files/file-objects.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { Reply } from '../http/reply.js';
import type { RouteDef } from '../http/server.js';
import { parseFileListQuery, parsePurpose } from '../schemas/files.js';
import type { FilesStore } from '../core/store/files-store.js';
import { receiveFile } from './file-multipart.js';
import { keyed } from './guard.js';
import type { Services } from '../app/services.js';

export interface FilesServices extends Services {
  readonly files: FilesStore;
  readonly filesConfig: FilesConfig;
}

/** Room for the multipart framing and the text fields around the file. */
export const MULTIPART_SLACK = 1024 * 1024;

export const fileNotFound = (id: string): GatewayError => new GatewayError('file_not_found', { param: 'file_id', message: `No file ${JSON.stringify(id.slice(0, 80))} in this project.` });

export function filesRoutes(services: FilesServices): RouteDef[] {
  const { files } = services;
  const maxBytes = services.filesConfig.max_bytes;
  return [
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/files',
      family: 'files',
      streamBody: true,
      bodyLimit: maxBytes + MULTIPART_SLACK,
      handle: async (ctx, auth) => {
        const source = ctx.req.bodyStream();
        if (!source) throw new GatewayError('internal_error');
        const got = await receiveFile(files, source, ctx.req.header('content-type'), 'file', maxBytes);
        // The client left once its body was in (a half-close: uWS closes on FIN): it would never learn the
        // file's id, so nothing is stored (issue 31).
        if (ctx.req.aborted) {
          void files.discard(got.staged).catch(() => undefined);
          return;
        }
        try {
          const purpose = parsePurpose(got.fields.purpose);
          const meta = await files.commit(auth.project.id, got.staged, got.filename, purpose);
          // The close can also land while the commit runs (seen on a loaded machine): the file goes again.
          if (ctx.req.aborted) {
            await files.delete(auth.project.id, meta.id);
            return;
          }
          ctx.reply.json(200, fileObject(meta));
        } catch (err) {
          void files.discard(got.staged).catch(() => undefined);
          throw err;
        }
      },
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/files',
      family: 'files',
      handle: async (ctx, auth) => {
        const query = parseFileListQuery(ctx.req.searchParams());
        const page = await files.list(auth.project.id, query);
        if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no file of this project: ${JSON.stringify(query.after)}.` });
        const data = page.data.map(fileObject);
        ctx.reply.json(200, { object: 'list', data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore });
      },
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/files/:file',
      family: 'files',
      handle: async (ctx, auth) => {
        const id = ctx.req.params.file ?? '';
        const meta = await files.get(auth.project.id, id);
        if (!meta) throw fileNotFound(id);
        ctx.reply.json(200, fileObject(meta));
      },
    }),
    keyed(services, 'inference', {
      method: 'DELETE',
      pattern: '/:project/v1/files/:file',
      family: 'files',
      handle: async (ctx, auth) => {
        const id = ctx.req.params.file ?? '';
        if (!(await files.delete(auth.project.id, id))) throw fileNotFound(id);
        ctx.reply.json(200, { id, object: 'file', deleted: true });
      },
    }),
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/files/:file/content',
      family: 'files',
      handle: async (ctx, auth) => {
        const id = ctx.req.params.file ?? '';
        const opened = await files.open(auth.project.id, id);
        if (!opened) throw fileNotFound(id);
        await streamFile(ctx.req, ctx.reply, opened.content);
      },
    }),
  ];
}

/** The file's bytes to the client, reading on only while the socket takes them (Reply.onWritable). */
function streamFile(req: IncomingRequest, reply: Reply, body: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    let begun = false;
    req.onAbort(() => body.destroy());
    reply.onDrainDeadline(() => {
      reply.endStream();
      body.destroy();
      resolve();
    });
    body.on('data', (chunk) => {
      if (!reply.open) return;
      if (!begun) {
        begun = true;
        reply.beginStream(200, 'application/octet-stream');
      }
      if (!reply.write(chunk)) {
        body.pause();
        reply.onWritable(() => body.resume());
      }
    });
    body.on('end', () => {
      if (!begun) reply.send(200, Buffer.alloc(0), 'application/octet-stream');
      else reply.endStream();
      resolve();
    });
    body.on('error', (err) => {
      if (!begun) return reject(err);
      reply.endStream();
      resolve();
    });
  });
}
