/** Wire schemas of the Files and Uploads API (OpenAI shapes: openai-node resources/files.d.ts, uploads/). */
import { z } from 'zod';
import { FILE_PURPOSES, type FilePurpose } from '../core/files/file-objects.js';
import { GatewayError } from '../errors.js';
import { parseStrictBody } from './issues.js';

const purposeList = FILE_PURPOSES.join(', ');

export function parsePurpose(value: string | undefined): FilePurpose {
  if (value === undefined || value === '') throw new GatewayError('invalid_request', { param: 'purpose', message: `purpose is required: one of ${purposeList}.` });
  if (!(FILE_PURPOSES as readonly string[]).includes(value)) {
    throw new GatewayError('invalid_request', { param: 'purpose', message: `purpose must be one of ${purposeList}; got ${JSON.stringify(value.slice(0, 40))}.` });
  }
  return value as FilePurpose;
}

/** OpenAI's list: limit 1 to 10,000 (default 10,000), order desc by default, after = a file id. */
const MAX_LIST = 10_000;

export interface FileListQuery {
  readonly purpose: string | undefined;
  readonly limit: number;
  readonly after: string | undefined;
  readonly order: 'asc' | 'desc';
}

export function parseFileListQuery(query: URLSearchParams): FileListQuery {
  const rawLimit = query.get('limit');
  let limit = MAX_LIST;
  if (rawLimit !== null) {
    limit = /^\d+$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) {
      throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be an integer from 1 to ${MAX_LIST}; got ${JSON.stringify(rawLimit.slice(0, 40))}.` });
    }
  }
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new GatewayError('invalid_query', { param: 'order', message: 'order must be asc or desc.' });
  const after = query.get('after');
  if (after === '') throw new GatewayError('invalid_query', { param: 'after', message: 'after must be the id of the last file of the previous page.' });
  const purpose = query.get('purpose');
  return { purpose: purpose === null || purpose === '' ? undefined : purpose, limit, after: after ?? undefined, order };
}

const createUploadSchema = z.strictObject({
  filename: z.string().min(1).max(1024),
  purpose: z.string(),
  bytes: z.number().int().positive(),
  mime_type: z.string().min(1).max(255),
  // openai-node sends it when set; accepted, the one-hour expiry stays (docs/decisions.md).
  expires_after: z.unknown().optional(),
});

export interface CreateUploadBody {
  readonly filename: string;
  readonly purpose: FilePurpose;
  readonly bytes: number;
  readonly mimeType: string;
}

export function parseCreateUpload(body: unknown, maxBytes: number): CreateUploadBody {
  const b = parseStrictBody(createUploadSchema, body, ['filename', 'purpose', 'bytes', 'mime_type']);
  const purpose = parsePurpose(b.purpose);
  if (b.bytes > maxBytes) throw new GatewayError('invalid_request', { param: 'bytes', message: `bytes must be at most ${maxBytes}.` });
  return { filename: b.filename, purpose, bytes: b.bytes, mimeType: b.mime_type };
}

const completeSchema = z.strictObject({
  part_ids: z.array(z.string().min(1)).min(1).max(10_000),
  md5: z.string().regex(/^[0-9a-fA-F]{32}$/).optional(),
});

export function parseCompleteUpload(body: unknown): { partIds: string[]; md5: string | undefined } {
  const b = parseStrictBody(completeSchema, body, ['part_ids', 'md5']);
  return { partIds: b.part_ids, md5: b.md5 };
}
