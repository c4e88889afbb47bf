// Audio routes of the simulator: transcriptions and translations (multipart), speech (JSON). Transcripts
// come from the speech code (speech-codec.ts) or, for other audio, from words hashed from the bytes.
import { parseWav, pcm16ToWav } from '../core/audio/wav.js';
import { SimError } from './errors.js';
import { isRecord } from './json.js';
import { boundaryOf, parseMultipart, type FormPart } from './multipart.js';
import { decodeSpeech, hashedTranscript, speak, SPEECH_SAMPLE_RATE } from './speech-codec.js';
import type { StreamTick } from './chat-stream.js';

export type SimReply =
  | { readonly kind: 'body'; readonly contentType: string; readonly body: string | Buffer }
  | { readonly kind: 'sse'; readonly ticks: StreamTick[] };

const TRANSCRIPT_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'];

export interface Transcript {
  readonly text: string;
  readonly durationMs: number;
}

/** The transcript of an uploaded file (WAV in the speech code, or anything else). */
export function transcribe(file: Buffer): Transcript {
  const wav = parseWav(file);
  if (!wav) return { text: hashedTranscript(file), durationMs: Math.round(file.length / 16) };
  const durationMs = Math.round((wav.data.length / 2 / wav.channels / wav.sampleRate) * 1000);
  return { text: decodeSpeech(wav.data) ?? hashedTranscript(wav.data), durationMs };
}

export function transcriptUsage(t: Transcript): Record<string, unknown> {
  const audio = Math.ceil(t.durationMs / 100);
  const output = Math.ceil(Buffer.byteLength(t.text) / 4);
  return { type: 'tokens', input_tokens: audio, input_token_details: { text_tokens: 0, audio_tokens: audio }, output_tokens: output, total_tokens: audio + output };
}

function field(parts: FormPart[], name: string): string | undefined {
  return parts.find((p) => p.name === name && p.filename === null)?.data.toString('utf8');
}

/** Multipart requests are logged as a JSON summary: the fields, and the file's name, type and size. */
export function summarizeUpload(parts: FormPart[]): string {
  const fields: Record<string, string> = {};
  const files: Record<string, unknown>[] = [];
  for (const p of parts) {
    if (p.filename === null) fields[p.name] = p.data.toString('utf8');
    else files.push({ name: p.name, filename: p.filename, content_type: p.contentType, bytes: p.data.length });
  }
  return JSON.stringify({ fields, files, order: parts.map((p) => p.name) });
}

function clock(ms: number, sep: string): string {
  const pad = (n: number, w = 2): string => String(Math.floor(n)).padStart(w, '0');
  return `${pad(ms / 3_600_000)}:${pad((ms / 60_000) % 60)}:${pad((ms / 1000) % 60)}${sep}${pad(ms % 1000, 3)}`;
}

/**
 * A multipart request has no JSON body for a `sim` object: a `sim` form field carries it instead, as JSON
 * (a gateway passes unknown fields through, and does not pass `x-sim-*` headers on).
 */
function formKnobs(parts: FormPart[]): unknown {
  const raw = field(parts, 'sim');
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new SimError(400, `Invalid simulator knobs in the sim field: ${JSON.stringify(raw)}`, 'invalid_sim_knob', 'sim');
  }
}

export function handleTranscription(task: 'transcribe' | 'translate', contentType: string | undefined, body: Buffer): { reply: SimReply; log: string; sim: unknown } {
  const parts = parseMultipart(body, boundaryOf(contentType));
  const log = summarizeUpload(parts);
  const sim = formKnobs(parts);
  const file = parts.find((p) => p.name === 'file' && p.filename !== null);
  if (!file) throw new SimError(400, 'Missing required file field: file', 'invalid_value', 'file');
  if (!field(parts, 'model')) throw new SimError(400, 'Missing required field: model', 'invalid_value', 'model');
  const format = field(parts, 'response_format') ?? 'json';
  if (!TRANSCRIPT_FORMATS.includes(format)) throw new SimError(400, `Unsupported response_format ${format}`, 'invalid_value', 'response_format');
  const t = transcribe(file.data);
  const usage = transcriptUsage(t);
  if (field(parts, 'stream') === 'true' && task === 'transcribe') {
    const words = t.text.split(/(?= )/).filter(Boolean);
    const ticks: StreamTick[] = words.map((w) => [{ text: `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: w })}\n\n`, countsForFailAfter: true }]);
    ticks.push([{ text: `data: ${JSON.stringify({ type: 'transcript.text.done', text: t.text, usage })}\n\n`, countsForFailAfter: false }]);
    return { reply: { kind: 'sse', ticks }, log, sim };
  }
  const cue = `${clock(0, ',')} --> ${clock(t.durationMs, ',')}`;
  switch (format) {
    case 'text':
      return { reply: { kind: 'body', contentType: 'text/plain; charset=utf-8', body: `${t.text}\n` }, log, sim };
    case 'srt':
      return { reply: { kind: 'body', contentType: 'text/plain; charset=utf-8', body: `1\n${cue}\n${t.text}\n\n` }, log, sim };
    case 'vtt':
      return { reply: { kind: 'body', contentType: 'text/vtt; charset=utf-8', body: `WEBVTT\n\n${cue.replace(/,/g, '.')}\n${t.text}\n\n` }, log, sim };
    case 'verbose_json': {
      const seconds = t.durationMs / 1000;
      const verbose = {
        task,
        language: 'english',
        duration: seconds,
        text: t.text,
        segments: [{ id: 0, seek: 0, start: 0, end: seconds, text: t.text, tokens: [], temperature: 0, avg_logprob: -0.1, compression_ratio: 1, no_speech_prob: 0 }],
        usage: { type: 'duration', seconds: Math.ceil(seconds) },
      };
      return { reply: { kind: 'body', contentType: 'application/json', body: JSON.stringify(verbose) }, log, sim };
    }
    default:
      return { reply: { kind: 'body', contentType: 'application/json', body: JSON.stringify({ text: t.text, usage }) }, log, sim };
  }
}

const SPEECH_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};
const SSE_CHUNK_BYTES = 4800;

/** Speech: the input spoken in the speech code at 24 kHz. Formats the simulator cannot encode get WAV bytes. */
export function handleSpeech(body: unknown): SimReply {
  if (!isRecord(body)) throw new SimError(400, 'Body must be a JSON object', 'invalid_value');
  const input = body['input'];
  if (typeof input !== 'string' || input.length === 0) throw new SimError(400, 'input must be a non-empty string', 'invalid_value', 'input');
  if (body['voice'] === undefined) throw new SimError(400, 'voice is required', 'invalid_value', 'voice');
  const format = typeof body['response_format'] === 'string' ? body['response_format'] : 'mp3';
  const type = SPEECH_TYPES[format];
  if (!type) throw new SimError(400, `Unsupported response_format ${format}`, 'invalid_value', 'response_format');
  const pcm = speak(input, { silenceAfterMs: 20 });
  const audio = format === 'pcm' ? pcm : pcm16ToWav(pcm, SPEECH_SAMPLE_RATE);
  if (body['stream_format'] !== 'sse') return { kind: 'body', contentType: type, body: audio };
  const ticks: StreamTick[] = [];
  for (let at = 0; at < audio.length; at += SSE_CHUNK_BYTES) {
    const delta = { type: 'speech.audio.delta', audio: audio.subarray(at, at + SSE_CHUNK_BYTES).toString('base64') };
    ticks.push([{ text: `data: ${JSON.stringify(delta)}\n\n`, countsForFailAfter: true }]);
  }
  const inputTokens = Math.ceil(Buffer.byteLength(input) / 4);
  const outputTokens = Math.ceil(pcm.length / 2 / SPEECH_SAMPLE_RATE / 0.1);
  const usage = { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
  ticks.push([{ text: `data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`, countsForFailAfter: false }]);
  return { kind: 'sse', ticks };
}
