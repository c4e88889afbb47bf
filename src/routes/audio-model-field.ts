/**
 * The `model` form field of an upload on the project-level audio routes (`/{project}/v1/audio/...`),
 * read before the upload is forwarded: the field picks the endpoint (core/models/resolve-model.ts), and
 * audio-upload.ts needs that endpoint's upstream model before it writes a byte. The body is then replayed
 * whole to the same forwarder the direct route uses, so every part is checked and re-encoded exactly as
 * there. Held back is only what precedes the field: a client that sends `model` before the file (the
 * Python SDK, `curl -F model=... -F file=@...`) streams as on the direct route; one that sends the file
 * first (the Node SDK, in the order its params are written) is buffered up to the route's body cap
 * (`audio.max_upload_bytes`) until the field arrives.
 */
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { GatewayError } from '../errors.js';

export interface ModelField {
  readonly model: string;
  /** The whole body again from its first byte: what was read to find the field, then the rest as it arrives. */
  readonly body: Readable;
}

function invalid(param: string | null, message: string): GatewayError {
  return new GatewayError('invalid_request', { param, message });
}

export function readModelField(source: Readable, contentType: string | undefined): Promise<ModelField> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType ?? '' }, limits: { files: 1, fieldSize: 64 * 1024 }, defParamCharset: 'utf8' });
    } catch {
      reject(invalid(null, 'The body must be multipart/form-data with a boundary, holding the audio in a file field named file.'));
      return;
    }
    const seen: Buffer[] = [];
    let settled = false;
    const onData = (chunk: Buffer): void => {
      seen.push(chunk);
      parser.write(chunk);
    };
    const onEnd = (): void => {
      parser.end();
    };
    const onError = (err: unknown): void => fail(err instanceof GatewayError ? err : invalid(null, 'The upload was interrupted.'));
    const stop = (): void => {
      settled = true;
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      source.pause();
    };
    function fail(err: GatewayError): void {
      if (settled) return;
      stop();
      reject(err);
    }
    parser.on('field', (name, value) => {
      if (settled || name !== 'model') return;
      if (value.trim() === '') return fail(invalid('model', 'model must be a non-empty string.'));
      stop();
      resolve({ model: value, body: replay(seen, source) });
    });
    // The sniffer only looks for the field; the file's bytes are kept in `seen` and forwarded on replay.
    parser.on('file', (_name, stream) => stream.resume());
    parser.on('error', (err: Error) => fail(invalid(null, `The multipart body is malformed: ${err.message}`)));
    parser.on('close', () => fail(invalid('model', 'model is required: it names the model that serves the request (GET /{project_id}/v1/models lists them).')));
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
  });
}

function replay(seen: readonly Buffer[], rest: Readable): Readable {
  return Readable.from(
    (async function* () {
      yield* seen;
      yield* rest;
    })(),
    { objectMode: false },
  );
}
