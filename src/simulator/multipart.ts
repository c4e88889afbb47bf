// A buffered multipart/form-data parser: the simulator reads whole uploads (test-sized), so a
// streaming parser would only add moving parts. The gateway's own parsing is streamed (busboy).
import { SimError } from './errors.js';

export interface FormPart {
  readonly name: string;
  readonly filename: string | null;
  readonly contentType: string | null;
  readonly data: Buffer;
}

export function boundaryOf(contentType: string | undefined): string {
  const m = /^multipart\/form-data\s*;.*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw new SimError(400, 'Expected a multipart/form-data body with a boundary', 'invalid_content_type');
  return boundary;
}

export function parseMultipart(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) throw new SimError(400, 'Malformed multipart body: no boundary found', 'invalid_multipart');
  for (;;) {
    at += delimiter.length;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts; // closing --boundary--
    const headerEnd = body.indexOf('\r\n\r\n', at);
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd);
    if (headerEnd < 0 || next < 0) throw new SimError(400, 'Malformed multipart body: unterminated part', 'invalid_multipart');
    const headers = body.toString('utf8', at, headerEnd);
    const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) throw new SimError(400, 'Malformed multipart body: a part has no name', 'invalid_multipart');
    parts.push({
      name,
      filename: /\bfilename="([^"]*)"/i.exec(disposition)?.[1] ?? null,
      contentType: /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1]?.trim() ?? null,
      data: body.subarray(headerEnd + 4, next),
    });
    at = next + 2;
  }
}
