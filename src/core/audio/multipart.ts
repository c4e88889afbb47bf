/**
 * A multipart/form-data body for one audio upload (RFC 7578): text fields, then the file. What the
 * gateway sends to a transcription server's /audio/transcriptions. Pure: the caller picks the boundary
 * (random, so that it cannot occur in the audio).
 */

export interface FilePart {
  readonly name: string;
  readonly filename: string;
  readonly contentType: string;
  readonly data: Buffer;
}

export function multipartBody(boundary: string, fields: readonly (readonly [string, string])[], file: FilePart): { body: Buffer; contentType: string } {
  const text = fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('');
  const head = `${text}--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\nContent-Type: ${file.contentType}\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), file.data, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}
