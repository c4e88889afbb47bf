/**
 * Audio in chat, through the project's own audio endpoints (docs/decisions.md "Audio in chat"):
 * - SPEC "Message object": input_audio parts are transcribed by the project's transcription endpoint
 *   before the model sees the turn, all parts of a request at once; each becomes a text part holding its
 *   transcript (core/chat/part-edits.ts keeps every other byte of the body).
 * - SPEC `modalities`/`audio`: with modalities [text, audio] the project's speech endpoint speaks the
 *   finished answer, attached as `message.audio` {id, data, expires_at, transcript}.
 * Every audio call is its own usage row (route `audio`, on the audio endpoint, request id = the chat
 * request id plus the SPEC path of the part or message it served), charged like the audio routes.
 */
import { randomBytes } from 'node:crypto';
import { speechUsage, transcriptionUsage } from '../../core/audio/audio-usage.js';
import { multipartBody } from '../../core/audio/multipart.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { partPath, type EditedBody, type PartEdit } from '../../core/chat/part-edits.js';
import { removeTopLevel } from '../../core/json-splice.js';
import { budgetError } from '../../core/limits/budget-errors.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { TurnCaller } from '../turn-io.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import { recordAudioUsage, startAudioCall, type AudioAccount, type AudioCall } from '../audio/audio-call.js';
import type { ChatServices, Outcome } from './chat-dispatch.js';
import { readCapped } from '../../upstream/answer-cap.js';

type Json = Record<string, unknown>;

/** The request an audio call serves: its abort signal, log and request id, and whom to charge. */
export interface AudioTurn {
  readonly req: TurnCaller;
  readonly account: AudioAccount;
}

interface AudioPart {
  readonly message: number;
  readonly part: number;
  readonly data: string;
  readonly format: string;
}

/** Standard base64; line breaks (MIME-style encoders) are tolerated, a data: prefix is not. */
const BASE64 = /^[A-Za-z0-9+/\r\n]+={0,2}[\r\n]*$/;
/** A format becomes a file name and a Content-Type in the multipart upload: plain names only. */
const FORMAT_NAME = /^[A-Za-z0-9]{1,16}$/;
const MIME: Readonly<Record<string, string>> = { mp3: 'audio/mpeg', m4a: 'audio/mp4', mp4: 'audio/mp4', mpga: 'audio/mpeg' };

/** The project's active endpoint of a kind: the first in configuration order. */
export function projectAudioEndpoint(services: ChatServices, projectId: string, kind: 'transcription' | 'speech'): EndpointRecord | undefined {
  return services.catalog.endpoints(projectId).find((e) => e.kind === kind && e.status === 'active');
}

function checkAudioBudget(services: ChatServices, endpoint: EndpointRecord, account: AudioAccount): void {
  const verdict = services.budgets.check(account.projectId, endpoint.id, account.workspaceId, services.now());
  if (verdict?.exhausted) throw budgetError(verdict.exhausted);
}

function audioParts(chat: ChatRequest): AudioPart[] {
  const parts: AudioPart[] = [];
  chat.messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((p, j) => {
      if (p.type === 'input_audio') parts.push({ message: i, part: j, data: p.input_audio.data, format: p.input_audio.format });
    });
  });
  return parts;
}

/** The audio of a part, or a 400 naming the field at fault. */
function decodePart(p: AudioPart): Buffer {
  const at = partPath(p.message, p.part);
  if (!BASE64.test(p.data)) {
    throw new GatewayError('invalid_request', { param: `${at}.input_audio.data`, message: `${at}.input_audio.data must be base64-encoded audio, without a data: prefix.` });
  }
  if (!FORMAT_NAME.test(p.format)) {
    throw new GatewayError('invalid_request', { param: `${at}.input_audio.format`, message: `${at}.input_audio.format must be an audio format name such as wav or mp3; got ${JSON.stringify(p.format.slice(0, 40))}.` });
  }
  return Buffer.from(p.data, 'base64');
}

/** How a failed audio call is recorded. */
function outcomeOf(req: TurnCaller, e: GatewayError): Outcome {
  return req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error';
}

/** The body of a successful call, or the call's mapped failure (the deadline timer cleared either way). */
async function bodyOf<T>(call: AudioCall, read: (res: Awaited<AudioCall['response']>) => Promise<T>): Promise<T> {
  try {
    return await read(await call.response);
  } catch (err) {
    throw call.deadline.failure(err);
  } finally {
    call.deadline.done();
  }
}

/**
 * The transcripts of every input_audio part, as text-part edits; none when there is no audio. The calls
 * run in parallel; when several fail, the error names the first failing part in request order.
 */
export async function transcribeAudioParts(services: ChatServices, turn: AudioTurn, chat: ChatRequest): Promise<PartEdit[]> {
  const parts = audioParts(chat);
  const first = parts[0];
  if (!first) return [];
  const endpoint = projectAudioEndpoint(services, turn.account.projectId, 'transcription');
  if (!endpoint) {
    const at = partPath(first.message, first.part);
    throw new GatewayError('invalid_request', {
      param: at,
      message: `${at} is an input_audio part: audio in chat is transcribed by the project's transcription endpoint, and project ${turn.account.projectId} has no active one. Send the text instead, or add a transcription endpoint.`,
    });
  }
  const files = parts.map(decodePart);
  checkAudioBudget(services, endpoint, turn.account);
  const results = await Promise.allSettled(parts.map((p, k) => transcribeOne(services, turn, endpoint, p, files[k] as Buffer)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<PartEdit>).value);
}

async function transcribeOne(services: ChatServices, turn: AudioTurn, endpoint: EndpointRecord, p: AudioPart, file: Buffer): Promise<PartEdit> {
  const { req } = turn;
  const at = partPath(p.message, p.part);
  const upload = multipartBody(
    `switchboard-${randomBytes(16).toString('hex')}`,
    [['model', endpoint.upstream.model], ['response_format', 'json']],
    { name: 'file', filename: `audio.${p.format}`, contentType: MIME[p.format.toLowerCase()] ?? `audio/${p.format.toLowerCase()}`, data: file },
  );
  const call = startAudioCall(services, req, endpoint, { path: '/audio/transcriptions', body: upload.body, contentType: upload.contentType }, deadlinesFor(endpoint.tier, services.timeouts, false));
  const record = (outcome: Outcome, usage: ReturnType<typeof transcriptionUsage> | null): void =>
    recordAudioUsage(services, { requestId: `${req.requestId}:${at}`, endpoint, account: turn.account, route: 'audio', outcome, usage, started: call.deadline.started, call: call.deadline });
  try {
    const text = (await bodyOf(call, (res) => readCapped(res.body))).toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new GatewayError('internal_error', { message: 'The transcription server returned a response that is not JSON.' });
    }
    const transcript = parsed && typeof parsed === 'object' && typeof (parsed as Json).text === 'string' ? ((parsed as Json).text as string).trim() : null;
    if (transcript === null) throw new GatewayError('internal_error', { message: 'The transcription server returned no text.' });
    record('completed', transcriptionUsage('application/json', text, file.length, true));
    return { message: p.message, part: p.part, value: { type: 'text', text: transcript } };
  } catch (err) {
    const e = err instanceof GatewayError ? err : new GatewayError('internal_error');
    record(outcomeOf(req, e), null);
    throw new GatewayError(e.code, {
      param: at,
      message: `${at} could not be transcribed by endpoint ${endpoint.slug}: ${e.message}`,
      ...(e.headers ? { headers: e.headers } : {}),
      ...(e.extra ? { extra: e.extra } : {}),
    });
  }
}

/** Chat `audio.format` names (the widely used chat API) and the speech route's response_format for each. */
const OUTPUT_FORMATS: Readonly<Record<string, string>> = { wav: 'wav', mp3: 'mp3', flac: 'flac', opus: 'opus', aac: 'aac', pcm16: 'pcm' };
/** When `audio` is omitted: the common default voice, and WAV (playable everywhere, the simulator's own). */
const DEFAULT_VOICE = 'alloy';
const DEFAULT_FORMAT = 'wav';
/** A speech server answering more than this for one message is refused rather than buffered. */
const MAX_SPEECH_BYTES = 64 * 1024 * 1024;

export interface SpeechPlan {
  readonly endpoint: EndpointRecord;
  readonly voice: string;
  readonly responseFormat: string;
}

/**
 * What modalities [text, audio] needs, checked before the model is called: the speech endpoint (its
 * presence is a capability check, core/chat/capabilities.ts), a format it can be asked for, its budget.
 * null when no audio output was asked for.
 */
export function planSpeech(services: ChatServices, account: AudioAccount, chat: ChatRequest): SpeechPlan | null {
  if (!chat.modalities?.includes('audio')) return null;
  const endpoint = projectAudioEndpoint(services, account.projectId, 'speech');
  if (!endpoint) throw new GatewayError('invalid_request', { param: 'modalities', message: 'modalities includes audio, but this project has no active speech endpoint.' });
  const format = chat.audio?.format ?? DEFAULT_FORMAT;
  const responseFormat = OUTPUT_FORMATS[format];
  if (!responseFormat) {
    throw new GatewayError('unsupported_value', { param: 'audio.format', message: `audio.format must be one of ${Object.keys(OUTPUT_FORMATS).join(', ')}; got ${JSON.stringify(format.slice(0, 40))}.` });
  }
  checkAudioBudget(services, endpoint, account);
  return { endpoint, voice: chat.audio?.voice ?? DEFAULT_VOICE, responseFormat };
}

/**
 * Speaks the content of every choice that has text (in parallel) and attaches `message.audio`. The
 * content stays where it is (the model's answer is not dropped); `transcript` repeats it. The gateway
 * keeps no copy of the audio, so `expires_at` is the response's `created`: the id cannot be referred to later.
 */
export async function speakAnswers(services: ChatServices, plan: SpeechPlan, turn: AudioTurn, body: Json): Promise<void> {
  const choices = Array.isArray(body.choices) ? (body.choices as Json[]) : [];
  const created = typeof body.created === 'number' ? body.created : Math.floor(services.now() / 1000);
  await Promise.all(
    choices.map(async (choice, k) => {
      const message = choice.message as Json | undefined;
      if (!message || typeof message.content !== 'string' || message.content === '') return;
      const audio = await speakOne(services, plan, turn, message.content, k);
      message.audio = { id: `audio_${randomBytes(12).toString('hex')}`, data: audio.toString('base64'), expires_at: created, transcript: message.content };
    }),
  );
}

const AUDIO_OUTPUT_FIELDS: ReadonlySet<string> = new Set(['modalities', 'audio']);

/**
 * The model's body without `modalities` and `audio`: the gateway speaks the answer itself, so the model
 * is asked for text (an audio-capable model would otherwise spend tokens on audio nobody receives).
 */
export function withoutAudioOutput(body: EditedBody): EditedBody {
  const parsed = Object.fromEntries(Object.entries(body.parsed).filter(([key]) => !AUDIO_OUTPUT_FIELDS.has(key)));
  return { raw: removeTopLevel(body.raw, AUDIO_OUTPUT_FIELDS) ?? Buffer.from(JSON.stringify(parsed)), parsed };
}

/** Upstream speech params, named as the chat request names them. */
const SPEECH_PARAMS: Readonly<Record<string, string>> = { voice: 'audio.voice', response_format: 'audio.format' };

async function speakOne(services: ChatServices, plan: SpeechPlan, turn: AudioTurn, input: string, choice: number): Promise<Buffer> {
  const { req } = turn;
  const { endpoint } = plan;
  const body = Buffer.from(JSON.stringify({ model: endpoint.upstream.model, input, voice: plan.voice, response_format: plan.responseFormat }));
  const call = startAudioCall(services, req, endpoint, { path: '/audio/speech', body }, deadlinesFor(endpoint.tier, services.timeouts, false));
  const record = (outcome: Outcome, usage: ReturnType<typeof speechUsage> | null): void =>
    recordAudioUsage(services, { requestId: `${req.requestId}:choices[${choice}].message.audio`, endpoint, account: turn.account, route: 'audio', outcome, usage, started: call.deadline.started, call: call.deadline });
  try {
    const audio = await bodyOf(call, (res) => readCapped(res.body, MAX_SPEECH_BYTES));
    record('completed', speechUsage(input, null));
    return audio;
  } catch (err) {
    const e = err instanceof GatewayError ? err : new GatewayError('internal_error');
    record(outcomeOf(req, e), null);
    throw new GatewayError(e.code, {
      param: (e.param !== null ? SPEECH_PARAMS[e.param] : undefined) ?? 'modalities',
      message: `The answer could not be spoken by endpoint ${endpoint.slug}: ${e.message}`,
      ...(e.headers ? { headers: e.headers } : {}),
      ...(e.extra ? { extra: e.extra } : {}),
    });
  }
}

