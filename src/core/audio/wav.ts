/**
 * RIFF/WAVE for 16-bit PCM: the container the gateway wraps realtime segments in (every OpenAI-compatible
 * transcription server accepts it), and the one the simulator decodes. Pure.
 */

export const PCM16_BYTES_PER_SAMPLE = 2;

export function wavHeader(dataBytes: number, sampleRate: number, channels = 1): Buffer {
  const h = Buffer.alloc(44);
  const blockAlign = channels * PCM16_BYTES_PER_SAMPLE;
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

export function pcm16ToWav(pcm: Buffer, sampleRate: number): Buffer {
  return Buffer.concat([wavHeader(pcm.length, sampleRate), pcm]);
}

export interface WavPcm {
  readonly sampleRate: number;
  readonly channels: number;
  /** Little-endian 16-bit samples (the data chunk). */
  readonly data: Buffer;
}

/** The PCM data of a 16-bit PCM WAV file; null for anything else. */
export function parseWav(buf: Buffer): WavPcm | null {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') return null;
  let pos = 12;
  let format: { sampleRate: number; channels: number; bits: number; tag: number } | null = null;
  while (pos + 8 <= buf.length) {
    const id = buf.toString('ascii', pos, pos + 4);
    const size = buf.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ' && body + 16 <= buf.length) {
      format = { tag: buf.readUInt16LE(body), channels: buf.readUInt16LE(body + 2), sampleRate: buf.readUInt32LE(body + 4), bits: buf.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!format || format.tag !== 1 || format.bits !== 16) return null;
      const end = Math.min(buf.length, body + size);
      return { sampleRate: format.sampleRate, channels: format.channels, data: buf.subarray(body, end - ((end - body) % 2)) };
    }
    pos = body + size + (size % 2);
  }
  return null;
}

/** Duration of PCM16 mono bytes at a sample rate, in milliseconds. */
export function pcm16DurationMs(bytes: number, sampleRate: number): number {
  return (bytes / PCM16_BYTES_PER_SAMPLE / sampleRate) * 1000;
}
