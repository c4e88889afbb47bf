/**
 * The simulator's "speech": a reversible code between text and 16-bit PCM, so that tests can speak a
 * sentence into a realtime session or an upload and assert the exact transcript, and so that the
 * simulator's speech route produces audio its transcription route turns back into the same text.
 *
 * Each UTF-8 byte b of the text is a run of constant samples of magnitude b x 128 (at most 32,640), the
 * sign alternating from one byte to the next so that repeated letters stay distinct runs. Silence is
 * zero samples. The level of every letter is well above any sensible VAD threshold (a space is 4,096,
 * i.e. 0.125 of full scale), so VAD cuts only on real silence. Decoding reads the runs back; zero runs
 * between runs become one space. Audio that is not in this code (any sample off the 128 grid) decodes to
 * null and the simulator falls back to words hashed from the bytes.
 */
import { generateWords } from './text-generation.js';

export const SPEECH_SAMPLE_RATE = 24_000;
export const SYMBOL_MS = 10;
const STEP = 128;

/** PCM16 little-endian samples speaking `text`, optionally with leading and trailing silence. */
export function speak(text: string, opts: { sampleRate?: number; symbolMs?: number; silenceBeforeMs?: number; silenceAfterMs?: number } = {}): Buffer {
  const rate = opts.sampleRate ?? SPEECH_SAMPLE_RATE;
  const perSymbol = Math.max(1, Math.round((rate * (opts.symbolMs ?? SYMBOL_MS)) / 1000));
  const before = Math.round((rate * (opts.silenceBeforeMs ?? 0)) / 1000);
  const after = Math.round((rate * (opts.silenceAfterMs ?? 0)) / 1000);
  const bytes = Buffer.from(text, 'utf8');
  const out = Buffer.alloc((before + bytes.length * perSymbol + after) * 2);
  let at = before * 2;
  bytes.forEach((b, i) => {
    const value = (i % 2 === 0 ? 1 : -1) * b * STEP;
    for (let k = 0; k < perSymbol; k++, at += 2) out.writeInt16LE(value, at);
  });
  return out;
}

/** Silence of the given length. */
export function silence(ms: number, sampleRate = SPEECH_SAMPLE_RATE): Buffer {
  return Buffer.alloc(Math.round((sampleRate * ms) / 1000) * 2);
}

/** The text spoken in `pcm`, or null when the audio is not in this code. */
export function decodeSpeech(pcm: Buffer): string | null {
  const bytes: number[] = [];
  let previous = 0;
  let gap = false;
  for (let i = 0; i + 1 < pcm.length; i += 2) {
    const s = pcm.readInt16LE(i);
    if (s === 0) {
      gap = bytes.length > 0;
      previous = 0;
      continue;
    }
    if (s % STEP !== 0) return null;
    if (s === previous) continue;
    if (gap) bytes.push(0x20);
    gap = false;
    previous = s;
    bytes.push(Math.abs(s) / STEP);
  }
  const text = Buffer.from(bytes).toString('utf8');
  if (text.includes('\uFFFD')) return null;
  return text.replace(/\s+/g, ' ').trim();
}

/** Words keyed on the audio's bytes, for audio the code cannot read: about one word per 8 KB. */
export function hashedTranscript(audio: Buffer): string {
  let h = 0x811c9dc5;
  const step = Math.max(1, Math.floor(audio.length / 65_536));
  for (let i = 0; i < audio.length; i += step) {
    h ^= audio[i] ?? 0;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const count = Math.min(64, Math.max(1, Math.ceil(audio.length / 8000)));
  return generateWords(h, count).join('');
}
