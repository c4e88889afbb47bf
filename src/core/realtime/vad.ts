/**
 * Energy-based voice activity detection for segment mode (docs/realtime.md). Audio is cut into 20 ms
 * frames; a frame is speech when its RMS, as a fraction of full scale, reaches the threshold. Speech starts
 * on the first speech frame and stops once `silenceMs` of consecutive non-speech frames follow it; the stop
 * is placed after that silence, as OpenAI's `speech_stopped.audio_end_ms` is ("the end of audio sent to the
 * model, and thus includes the min_silence_duration_ms").
 * Positions are absolute sample offsets since the session's first appended sample, also for a detector
 * made mid-session (new settings): it is given the session's position to count on from. Pure and
 * incremental: chunk boundaries do not change the result.
 */

export interface VadSettings {
  /** RMS as a fraction of full scale (0..1) at or above which a frame is speech. */
  readonly threshold: number;
  readonly silenceMs: number;
}

export type VadEvent =
  | { readonly kind: 'speech_started'; readonly sample: number }
  | { readonly kind: 'speech_stopped'; readonly sample: number };

const FRAME_MS = 20;

export class EnergyVad {
  readonly #frameSamples: number;
  readonly #thresholdSquared: number;
  readonly #silenceFrames: number;
  #sumSquares = 0;
  #inFrame = 0;
  #position = 0;
  #speaking = false;
  #silentFrames = 0;

  /** `position`: samples the session has had before this detector's first one. */
  constructor(settings: VadSettings, sampleRate: number, position = 0) {
    this.#position = position;
    this.#frameSamples = Math.max(1, Math.round((sampleRate * FRAME_MS) / 1000));
    const level = settings.threshold * 32768;
    this.#thresholdSquared = level * level;
    this.#silenceFrames = Math.max(1, Math.ceil(settings.silenceMs / FRAME_MS));
  }

  get speaking(): boolean {
    return this.#speaking;
  }

  /** Feeds little-endian PCM16 samples (an even number of bytes); returns what changed. */
  push(pcm: Buffer): VadEvent[] {
    const events: VadEvent[] = [];
    for (let i = 0; i + 1 < pcm.length; i += 2) {
      const s = pcm.readInt16LE(i);
      this.#sumSquares += s * s;
      this.#inFrame += 1;
      this.#position += 1;
      if (this.#inFrame === this.#frameSamples) this.#endFrame(events);
    }
    return events;
  }

  /** After a manual commit or clear: the next speech is a new turn. */
  reset(): void {
    this.#speaking = false;
    this.#silentFrames = 0;
    this.#sumSquares = 0;
    this.#inFrame = 0;
  }

  #endFrame(events: VadEvent[]): void {
    const speech = this.#sumSquares / this.#inFrame >= this.#thresholdSquared;
    const frameStart = this.#position - this.#inFrame;
    this.#sumSquares = 0;
    this.#inFrame = 0;
    if (speech) {
      if (!this.#speaking) events.push({ kind: 'speech_started', sample: frameStart });
      this.#speaking = true;
      this.#silentFrames = 0;
      return;
    }
    if (!this.#speaking) return;
    this.#silentFrames += 1;
    if (this.#silentFrames >= this.#silenceFrames) {
      this.#speaking = false;
      this.#silentFrames = 0;
      events.push({ kind: 'speech_stopped', sample: this.#position });
    }
  }
}
