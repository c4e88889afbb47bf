/**
 * One line of a batch input file (OpenAI's batch JSONL: `{custom_id, method, url, body}`), parsed and
 * checked before any of it reaches a model. Pure: no store, no upstream. A line that fails here is
 * answered in the error file and never dispatched (docs/decisions.md "Batches").
 *
 * The body itself is not validated here: it goes through the very route code live traffic does
 * (chat/embeddings schemas, capability checks), so a bad body is refused there with the same error a
 * live request would get.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../json-depth.js';

export type BatchEndpoint = '/v1/chat/completions' | '/v1/embeddings';

export const BATCH_ENDPOINTS: readonly BatchEndpoint[] = ['/v1/chat/completions', '/v1/embeddings'];

export interface BatchLine {
  readonly customId: string;
  readonly url: BatchEndpoint;
  /** The body's `model`: picks the endpoint as on the model-addressed routes. */
  readonly model: string;
  /** The body as the client wrote it (re-serialized once; forwarded as a live request's bytes would be). */
  readonly body: Buffer;
}

export interface LineError {
  /** Stable code written into the error file's `error.code`. */
  readonly code: 'invalid_json' | 'invalid_request' | 'duplicate_custom_id' | 'mismatched_endpoint';
  readonly message: string;
  /** When the line got far enough to have one. */
  readonly customId: string | null;
}

export type ParsedLine = { readonly ok: true; readonly line: BatchLine } | { readonly ok: false; readonly error: LineError };

/** SPEC leaves the line's size open; OpenAI's cap on a batch request body is far larger than ours. */
export const MAX_CUSTOM_ID_CHARS = 512;

const bad = (code: LineError['code'], message: string, customId: string | null = null): ParsedLine => ({ ok: false, error: { code, message, customId } });

/**
 * `endpoint` is the batch's own (every line must name it: OpenAI refuses a mixed file, and so do we, per
 * line). `seen` holds the custom ids of the lines before this one: a repeated id fails its later lines.
 */
export function parseBatchLine(text: string, endpoint: BatchEndpoint, seen: Set<string>): ParsedLine {
  // Checked before parsing, as for a live request body (request.ts): re-serializing a line nested thousands
  // deep overflowed the stack, which failed the whole validation at every sweep and left the batch
  // `validating` forever (issue 31). The line fails; the others run.
  if (nestsDeeperThan(Buffer.from(text))) return bad('invalid_json', `The line nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; flatten it.`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad('invalid_json', 'The line is not valid JSON.');
  }
  if (!isObject(value)) return bad('invalid_request', 'The line must be a JSON object.');
  const customId = value.custom_id;
  if (typeof customId !== 'string' || customId.length === 0) return bad('invalid_request', 'custom_id must be a non-empty string.');
  if (customId.length > MAX_CUSTOM_ID_CHARS) return bad('invalid_request', `custom_id may be at most ${MAX_CUSTOM_ID_CHARS} characters.`, null);
  if (seen.has(customId)) return bad('duplicate_custom_id', `custom_id ${JSON.stringify(customId)} is used by an earlier line.`, customId);
  seen.add(customId);
  if (value.method !== 'POST') return bad('invalid_request', 'method must be "POST".', customId);
  if (typeof value.url !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(value.url)) {
    return bad('invalid_request', `url must be one of ${BATCH_ENDPOINTS.join(', ')}.`, customId);
  }
  if (value.url !== endpoint) return bad('mismatched_endpoint', `url ${value.url} differs from the batch's endpoint ${endpoint}.`, customId);
  const body = value.body;
  if (!isObject(body)) return bad('invalid_request', 'body must be a JSON object.', customId);
  if (typeof body.model !== 'string' || body.model.length === 0) return bad('invalid_request', 'body.model must be a non-empty string.', customId);
  // A batch answer is one JSON body: a streamed turn has no place in the output file.
  if (body.stream === true) return bad('invalid_request', 'body.stream must not be true in a batch.', customId);
  return { ok: true, line: { customId, url: endpoint, model: body.model, body: Buffer.from(JSON.stringify(body)) } };
}

/** Splits a JSONL file into its non-blank lines, numbered from 0 in file order (CRLF tolerated). */
export function splitJsonl(content: string): string[] {
  return content.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).filter((l) => l.trim() !== '');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
