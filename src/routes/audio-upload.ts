/**
 * A multipart upload forwarded to the upstream as it arrives (never buffered whole): busboy parses the
 * client's body, and a new multipart body is written under our own boundary, with `model` replaced by the
 * endpoint's upstream model (written first) and every other part kept in order. The upstream call starts
 * when the file part begins, so a request refused on a field sent before the file never reaches it; a
 * field after the file that fails validation aborts the upstream call and still gives a 400.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import busboy from 'busboy';
import { GatewayError } from '../errors.js';

export interface UploadRules {
  readonly upstreamModel: string;
  /** A text field's problem, or null. `model` is checked here (non-empty) and never forwarded as sent. */
  checkField(name: string, value: string): GatewayError | null;
}

export interface UploadSummary {
  readonly fields: Readonly<Record<string, string>>;
  readonly fileBytes: number;
}

export interface ForwardedUpload {
  readonly contentType: string;
  readonly body: PassThrough;
  /** The file part has begun: time to call the upstream. Rejects (400/413) when the body fails before it. */
  readonly fileStarted: Promise<void>;
  /** The whole body was read, checked and re-encoded. */
  readonly finished: Promise<UploadSummary>;
}

const LIMITS = { files: 1, fields: 64, parts: 66, fieldSize: 64 * 1024, headerPairs: 64 };

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function invalid(param: string | null, message: string): GatewayError {
  return new GatewayError('invalid_request', { param, message });
}

const quote = (s: string): string => s.replace(/["\r\n\\]/g, '_');

export function forwardUpload(source: Readable, contentType: string | undefined, rules: UploadRules): ForwardedUpload {
  const boundary = `switchboard-${randomBytes(12).toString('hex')}`;
  const out = new PassThrough({ highWaterMark: 256 * 1024 });
  const started = deferred<void>();
  const finished = deferred<UploadSummary>();
  const result: ForwardedUpload = { contentType: `multipart/form-data; boundary=${boundary}`, body: out, fileStarted: started.promise, finished: finished.promise };
  let failure: GatewayError | null = null;
  const fail = (e: GatewayError): void => {
    if (failure) return;
    failure = e;
    started.reject(e);
    finished.reject(e);
    source.unpipe();
    out.destroy();
  };
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': contentType ?? '' }, limits: LIMITS, defParamCharset: 'utf8' });
  } catch {
    fail(invalid(null, 'The body must be multipart/form-data with a boundary, holding the audio in a file field named file.'));
    return result;
  }

  const write = async (chunk: string | Buffer): Promise<void> => {
    if (failure) throw failure;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  const fields: Record<string, string> = {};
  let fileSeen = false;
  let fileBytes = 0;
  // Parts are written strictly in order: a field parsed while the file is still flowing waits its turn.
  let tail: Promise<void> = write(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${rules.upstreamModel}\r\n`);
  const then = (task: () => Promise<void>): void => {
    tail = tail.then(task).catch((err: unknown) => fail(err instanceof GatewayError ? err : invalid('file', 'The upload ended before it was complete.')));
  };

  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) return fail(invalid(name, `${name} is longer than ${LIMITS.fieldSize} bytes.`));
    if (name === 'model' && value.trim() === '') return fail(invalid('model', 'model must be a non-empty string.'));
    const problem = name === 'model' ? null : rules.checkField(name, value);
    if (problem) return fail(problem);
    fields[name] = value;
    if (name !== 'model') then(() => write(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`));
  });
  parser.on('file', (name, stream, info) => {
    if (name !== 'file') {
      stream.resume();
      return fail(invalid(name, `${name} is a file part; the audio goes in the file field named file.`));
    }
    fileSeen = true;
    then(async () => {
      const type = info.mimeType || 'application/octet-stream';
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quote(info.filename || 'audio')}"\r\nContent-Type: ${type}\r\n\r\n`);
      started.resolve();
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        fileBytes += chunk.length;
        await write(chunk);
      }
      await write('\r\n');
    });
  });
  parser.on('filesLimit', () => fail(invalid('file', 'Only one file may be uploaded.')));
  parser.on('fieldsLimit', () => fail(invalid(null, `At most ${LIMITS.fields} fields may be sent.`)));
  parser.on('partsLimit', () => fail(invalid(null, `At most ${LIMITS.parts} parts may be sent.`)));
  parser.on('error', (err: Error) => fail(invalid(null, `The multipart body is malformed: ${err.message}`)));
  parser.on('close', () =>
    then(async () => {
      if (!fileSeen) throw invalid('file', 'file is required: send the audio as a multipart file field named file.');
      if (fileBytes === 0) throw invalid('file', 'file is empty.');
      if (fields.model === undefined) throw invalid('model', 'model is required (any non-empty string; the endpoint fixes the model that serves the request).');
      await write(`--${boundary}--\r\n`);
      out.end();
      finished.resolve({ fields, fileBytes });
    }),
  );
  source.on('error', (err) => fail(err instanceof GatewayError ? err : invalid(null, 'The upload was interrupted.')));
  source.pipe(parser);
  return result;
}
