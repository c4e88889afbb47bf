/**
 * What an audio request is charged (docs/decisions.md "Audio accounting"). The model server's own token
 * usage when it reports one; otherwise an estimate at 10 tokens per second of audio (the input rate of the
 * common audio models) and 4 UTF-8 bytes per text token. Pure.
 */

export interface AudioUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly source: 'upstream' | 'estimated';
}

type Json = Record<string, unknown>;

export const AUDIO_TOKENS_PER_SECOND = 10;
/** Uploads of unknown encoding: 16 kHz 16-bit mono is 32,000 bytes a second. */
const BYTES_PER_AUDIO_TOKEN = 32_000 / AUDIO_TOKENS_PER_SECOND;

export const textTokens = (text: string): number => Math.ceil(Buffer.byteLength(text) / 4);
export const audioTokensForMs = (ms: number): number => Math.ceil((ms / 1000) * AUDIO_TOKENS_PER_SECOND);

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

/** usage objects of the audio API: {type: tokens, input_tokens, output_tokens} or {type: duration, seconds}. */
export function fromUsageObject(usage: unknown, text: string): AudioUsage | null {
  if (!isObject(usage)) return null;
  const input = num(usage.input_tokens);
  const output = num(usage.output_tokens);
  if (input !== null && output !== null) return { promptTokens: input, completionTokens: output, source: 'upstream' };
  const seconds = num(usage.seconds);
  if (seconds !== null) return { promptTokens: Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND), completionTokens: textTokens(text), source: 'estimated' };
  return input !== null ? { promptTokens: input, completionTokens: textTokens(text), source: 'estimated' } : null;
}

/** A transcription or translation response as returned (json, verbose_json, text, srt, vtt or SSE). */
export function transcriptionUsage(contentType: string, body: string, fileBytes: number, complete: boolean): AudioUsage {
  const prompt = Math.ceil(fileBytes / BYTES_PER_AUDIO_TOKEN);
  if (complete && contentType.includes('json')) {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (isObject(parsed)) {
        const text = typeof parsed.text === 'string' ? parsed.text : '';
        const duration = num(parsed.duration);
        return fromUsageObject(parsed.usage, text) ?? {
          promptTokens: duration !== null ? Math.ceil(duration * AUDIO_TOKENS_PER_SECOND) : prompt,
          completionTokens: textTokens(text),
          source: 'estimated',
        };
      }
    } catch {
      // Not JSON after all: estimate from the bytes below.
    }
  }
  if (contentType.includes('event-stream')) {
    const done = lastSseEvent(body, 'transcript.text.done');
    const text = done && typeof done.text === 'string' ? done.text : '';
    const reported = done ? fromUsageObject(done.usage, text) : null;
    if (reported) return reported;
  }
  return { promptTokens: prompt, completionTokens: textTokens(body), source: 'estimated' };
}

/** Speech: the input text, plus the audio tokens the model server reports (SSE) when it does. */
export function speechUsage(input: string, sseTail: string | null): AudioUsage {
  const done = sseTail ? lastSseEvent(sseTail, 'speech.audio.done') : null;
  const reported = done ? fromUsageObject(done.usage, '') : null;
  return reported ?? { promptTokens: textTokens(input), completionTokens: 0, source: 'estimated' };
}

/** The last `data:` event of the given type in SSE text. */
function lastSseEvent(text: string, type: string): Json | null {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (!line.startsWith('data:') || !line.includes(type)) continue;
    try {
      const event = JSON.parse(line.slice(5).trim()) as unknown;
      if (isObject(event) && event.type === type) return event;
    } catch {
      // a partial line at the start of the tail
    }
  }
  return null;
}
