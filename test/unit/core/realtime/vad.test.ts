import { describe, expect, it } from 'vitest';
import { EnergyVad } from '../../../../src/core/realtime/vad.js';

const RATE = 24_000;
const samples = (ms: number, level: number): Buffer => {
  const out = Buffer.alloc(((RATE * ms) / 1000) * 2);
  for (let i = 0; i < out.length; i += 2) out.writeInt16LE(level, i);
  return out;
};

describe('EnergyVad', () => {
  // Regression: the stop was placed at the end of the last speech frame (2400); OpenAI's audio_end_ms
  // includes the silence that confirmed it.
  it('reports positions from the first sample it is fed, the stop after the silence that confirmed it', () => {
    const vad = new EnergyVad({ threshold: 0.02, silenceMs: 100 }, RATE);
    expect(vad.push(Buffer.concat([samples(40, 0), samples(60, 10_000), samples(100, 0)]))).toEqual([
      { kind: 'speech_started', sample: 960 },
      { kind: 'speech_stopped', sample: 4800 },
    ]);
  });

  // Regression: a detector rebuilt by a session update counted from zero again.
  it('counts on from the position it is given, as a detector made mid-session', () => {
    const vad = new EnergyVad({ threshold: 0.02, silenceMs: 100 }, RATE, 48_000);
    expect(vad.push(Buffer.concat([samples(40, 0), samples(60, 10_000), samples(100, 0)]))).toEqual([
      { kind: 'speech_started', sample: 48_960 },
      { kind: 'speech_stopped', sample: 52_800 },
    ]);
  });
});
