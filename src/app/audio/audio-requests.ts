/**
 * SPEC "Audio": one transcription, translation or speech request against its endpoint's model server,
 * once the route has admitted it (key, endpoint, budget) and read what it needs of the body. The answer
 * goes back as the model server wrote it (json, text, srt, vtt, verbose_json, audio bytes or SSE), with
 * one usage row per request (route `audio`), written before the answer's end reaches the socket.
 */
import type { Readable } from 'node:stream';
import { speechUsage, transcriptionUsage } from '../../core/audio/audio-usage.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { spliceTopLevel } from '../../core/json-splice.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { SpeechRequest } from '../../schemas/audio.js';
import type { ChatServices, Outcome } from '../chat/chat-dispatch.js';
import type { ByteExchange } from '../turn-io.js';
import { pipeToClient, recordAudioUsage, startAudioCall, type AudioAccount } from './audio-call.js';

export interface AudioAdmitted {
  readonly endpoint: EndpointRecord;
  readonly account: AudioAccount;
}

/**
 * The client's multipart upload, re-encoded for the upstream as it arrives (routes/audio-upload.ts), its
 * file part already begun.
 */
export interface AudioUpload {
  readonly contentType: string;
  readonly body: Readable;
  /** The whole body was read, checked and re-encoded. */
  readonly finished: Promise<{ readonly fileBytes: number }>;
}

/** A speech request's body: the client's bytes (forwarded with `model` replaced) and their parse. */
export interface SpeechBody {
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly speech: SpeechRequest;
}

/** A transcription or translation: the upload streamed to the model server, its answer piped back. */
export async function serveTranscription(services: ChatServices, ctx: ByteExchange, route: 'transcriptions' | 'translations', admitted: AudioAdmitted, upload: AudioUpload): Promise<void> {
  const { req, reply } = ctx;
  const { endpoint, account } = admitted;
  const deadlines = deadlinesFor(endpoint.tier, services.timeouts, false);
  const { response, deadline } = startAudioCall(services, req, endpoint, { path: `/audio/${route}`, body: upload.body, contentType: upload.contentType }, deadlines);
  const record = (outcome: Outcome, usage: ReturnType<typeof transcriptionUsage> | null, errorCode: string | null = null): void =>
    recordAudioUsage(services, { requestId: req.requestId, endpoint, account, route: 'audio', outcome, usage, started: deadline.started, call: deadline, errorCode });
  let fileBytes = 0;
  try {
    // An upstream that refuses early (before reading the whole upload) answers before the upload ends:
    // the response rejects with its error then.
    await Promise.race([upload.finished, response]);
    fileBytes = (await upload.finished).fileBytes;
    const res = await response;
    req.log.upstreamMs = performance.now() - deadline.started;
    deadline.done();
    const contentType = String(res.headers['content-type'] ?? '');
    await pipeToClient(req, reply, res, { keepTail: false, idleMs: deadlines.idleMs }, (piped) => record(piped.outcome, piped.outcome === 'completed' ? transcriptionUsage(contentType, piped.kept, fileBytes, piped.complete) : null, piped.error?.code ?? null));
  } catch (err) {
    deadline.abort();
    deadline.done();
    const e = err instanceof GatewayError && (err.status === 400 || err.status === 413) ? err : deadline.failure(err);
    record(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    throw e;
  }
}

/** Speech: the client's body with `model` replaced; the audio (or its SSE) piped back as it arrives. */
export async function serveSpeech(services: ChatServices, ctx: ByteExchange, admitted: AudioAdmitted, body: SpeechBody): Promise<void> {
  const { req, reply } = ctx;
  const { endpoint, account } = admitted;
  const { raw, parsed, speech } = body;
  const forwarded = spliceTopLevel(raw, new Map([['model', JSON.stringify(endpoint.upstream.model)]])) ?? Buffer.from(JSON.stringify({ ...parsed, model: endpoint.upstream.model }));
  const sse = speech.stream_format === 'sse';
  const deadlines = deadlinesFor(endpoint.tier, services.timeouts, false);
  const { response, deadline } = startAudioCall(services, req, endpoint, { path: '/audio/speech', body: forwarded, ...(sse ? { accept: 'text/event-stream' } : {}) }, deadlines);
  const record = (outcome: Outcome, usage: ReturnType<typeof speechUsage> | null, errorCode: string | null = null): void =>
    recordAudioUsage(services, { requestId: req.requestId, endpoint, account, route: 'audio', outcome, usage, started: deadline.started, call: deadline, errorCode });
  try {
    const res = await response;
    req.log.upstreamMs = performance.now() - deadline.started;
    deadline.done();
    await pipeToClient(req, reply, res, { keepTail: sse, idleMs: deadlines.idleMs }, (piped) => record(piped.outcome, piped.outcome === 'completed' ? speechUsage(speech.input, sse ? piped.kept : null) : null, piped.error?.code ?? null));
  } catch (err) {
    deadline.done();
    const e = deadline.failure(err);
    record(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null, e.code);
    throw e;
  }
}
