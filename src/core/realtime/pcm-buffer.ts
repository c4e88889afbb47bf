/**
 * The uncommitted audio of a realtime session: PCM16 chunks addressed by absolute sample offsets since the
 * session's first appended sample, so VAD positions and buffer cuts speak the same units. Pure.
 */
export class PcmBuffer {
  #chunks: Buffer[] = [];
  #start = 0;
  #bytes = 0;

  /** Sample offset of the first buffered sample. */
  get start(): number {
    return this.#start;
  }

  /** Sample offset just past the last buffered sample. */
  get end(): number {
    return this.#start + this.#bytes / 2;
  }

  get bytes(): number {
    return this.#bytes;
  }

  append(pcm: Buffer): void {
    this.#chunks.push(pcm);
    this.#bytes += pcm.length;
  }

  /** Removes and returns samples [from, to) (clamped to the buffer); everything before `to` is gone. */
  take(from: number, to: number): Buffer {
    const all = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#bytes);
    const a = Math.max(0, Math.min(this.#bytes, (from - this.#start) * 2));
    const b = Math.max(a, Math.min(this.#bytes, (to - this.#start) * 2));
    const rest = all.subarray(b);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#start += b / 2;
    this.#bytes = rest.length;
    return all.subarray(a, b);
  }

  /** Drops samples before `sample` (silence older than the prefix padding, while nobody speaks). */
  dropBefore(sample: number): void {
    if (sample > this.#start) this.take(sample, sample);
  }

  clear(): void {
    this.#start = this.end;
    this.#chunks = [];
    this.#bytes = 0;
  }
}
