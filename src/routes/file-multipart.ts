/**
 * A multipart body holding one file field (Files: `file`; upload parts: `data`) and text fields, with the
 * file streamed into staged bytes as it arrives (FilesStore.stage), never buffered whole: busboy waits for
 * the disk, BodyStream pauses the socket. Text fields may come before or after the file; they are checked
 * by the caller once the body is in, and the temp file is removed when anything fails.
 */
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { GatewayError } from '../errors.js';
import { FilesRefusal, type FilesStore, type StagedBytes } from '../core/store/files-store.js';

export interface ReceivedFile {
  readonly fields: Readonly<Record<string, string>>;
  readonly staged: StagedBytes;
  readonly filename: string;
}

/** busboy reads header parameters (the file name) as latin1 unless told: browsers and the SDKs send UTF-8 (`résumé.jsonl` was stored as `rÃ©sumÃ©.jsonl`). */
const PARAM_CHARSET = 'utf8';
const LIMITS = { files: 1, fields: 16, parts: 17, fieldSize: 64 * 1024, headerPairs: 64 };

const invalid = (param: string | null, message: string): GatewayError => new GatewayError('invalid_request', { param, message });

export function filesError(err: unknown): unknown {
  if (err instanceof FilesRefusal && err.reason === 'too_large') return new GatewayError('payload_too_large', { message: err.message });
  return err;
}

export function receiveFile(files: FilesStore, source: Readable, contentType: string | undefined, fileField: string, maxBytes: number): Promise<ReceivedFile> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType ?? '' }, limits: LIMITS, defParamCharset: PARAM_CHARSET });
    } catch {
      reject(invalid(null, `The body must be multipart/form-data with a boundary, holding the file in a field named ${fileField}.`));
      return;
    }
    const fields: Record<string, string> = {};
    let written: Promise<StagedBytes> | null = null;
    /** The file part being staged: destroyed on failure, so that the write fails and removes its temp file. */
    let fileStream: Readable | null = null;
    let filename = '';
    let failure: unknown = null;
    const fail = (err: unknown): void => {
      if (failure) return;
      failure = filesError(err);
      source.unpipe(parser);
      source.resume();
      // Unpiped, busboy never ends the file part: its write would wait forever with the temp file and its
      // descriptor open (an aborted upload leaked both until restart). Destroyed, the write fails and
      // removes what it wrote; one that had finished is discarded once it settles.
      fileStream?.destroy(new Error('the upload failed'));
      void written?.then((t) => files.discard(t), () => undefined).catch(() => undefined);
      reject(failure);
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) return fail(invalid(name, `${name} is longer than ${LIMITS.fieldSize} bytes.`));
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (name !== fileField || written) {
        stream.resume();
        return fail(invalid(name, `${name} is not expected here; send the file in one field named ${fileField}.`));
      }
      filename = info.filename || fileField;
      fileStream = stream;
      written = files.stage(stream, maxBytes);
      written.catch((err: unknown) => {
        stream.resume();
        fail(err);
      });
    });
    parser.on('filesLimit', () => fail(invalid(fileField, 'Only one file may be uploaded.')));
    parser.on('fieldsLimit', () => fail(invalid(null, `At most ${LIMITS.fields} fields may be sent.`)));
    parser.on('partsLimit', () => fail(invalid(null, `At most ${LIMITS.parts} parts may be sent.`)));
    parser.on('error', (err: Error) => fail(invalid(null, `The multipart body is malformed: ${err.message}`)));
    parser.on('close', () => {
      if (failure) return;
      if (!written) return fail(invalid(fileField, `${fileField} is required: send the bytes as a multipart file field named ${fileField}.`));
      written.then(
        (staged) => {
          if (failure) void files.discard(staged).catch(() => undefined);
          else resolve({ fields, staged, filename });
        },
        () => undefined,
      );
    });
    source.on('error', (err) => fail(err instanceof GatewayError ? err : invalid(null, 'The upload was interrupted.')));
    source.pipe(parser);
  });
}
