import { describe, it, expect } from 'vitest';
import { cosine } from '../../../src/core/vectors.js';
import { embedText, handleEmbeddings, toBase64Float32 } from '../../../src/simulator/embeddings.js';
import { SimError } from '../../../src/simulator/errors.js';

describe('embedText', () => {
  it('is deterministic and unit length', () => {
    const v = embedText('hello world');
    expect(v).toEqual(embedText('hello world'));
    expect(v).toHaveLength(256);
    expect(Math.hypot(...v)).toBeCloseTo(1, 10);
  });

  it('puts texts sharing words closer than unrelated texts', () => {
    const a = embedText('the cat sat on the mat');
    const b = embedText('a cat on a mat');
    const c = embedText('quantum chromodynamics lattice');
    expect(cosine(a, b)).toBeGreaterThan(0.4);
    expect(cosine(a, c)).toBeLessThan(0.2);
    expect(cosine(a, b)).toBeGreaterThan(cosine(a, c));
  });

  it('ignores case and punctuation', () => {
    expect(cosine(embedText('Hello, World!'), embedText('hello world'))).toBeCloseTo(1, 10);
  });

  it('never returns a zero vector', () => {
    expect(Math.hypot(...embedText(''))).toBeCloseTo(1, 10);
  });
});

describe('handleEmbeddings', () => {
  it('answers like a server that ignores encoding_format or dimensions when the knobs say so', () => {
    const asked = { model: 'm', input: 'abcd', dimensions: 8, encoding_format: 'base64' };
    expect(handleEmbeddings(asked, { embeddingFormat: 'float', ignoreDimensions: true }).data[0]?.embedding).toEqual(embedText('abcd'));
    expect(handleEmbeddings({ model: 'm', input: 'abcd' }, { embeddingFormat: 'base64', ignoreDimensions: false }).data[0]?.embedding).toBe(toBase64Float32(embedText('abcd')));
  });

  it('embeds arrays and token arrays with usage', () => {
    const res = handleEmbeddings({ model: 'm', input: ['abcd', 'abcdefgh'], dimensions: 8 });
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.data[0]?.embedding).toHaveLength(8);
    expect(res.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const tokens = handleEmbeddings({ input: [[1, 2, 3]] });
    expect(tokens.model).toBe('sim-embed');
    expect(tokens.data[0]?.embedding).toEqual(embedText('1 2 3'));
    expect(tokens.usage.prompt_tokens).toBe(3);
  });

  it('encodes base64 as little-endian float32', () => {
    const res = handleEmbeddings({ input: 'hi', encoding_format: 'base64', dimensions: 4 });
    const b64 = res.data[0]?.embedding;
    expect(typeof b64).toBe('string');
    const buf = Buffer.from(String(b64), 'base64');
    const floats = Array.from({ length: 4 }, (_, i) => buf.readFloatLE(i * 4));
    embedText('hi', 4).forEach((v, i) => expect(floats[i]).toBeCloseTo(v, 6));
    expect(toBase64Float32([1])).toBe(Buffer.from([0, 0, 0x80, 0x3f]).toString('base64'));
  });

  it.each([[{}], [{ input: 5 }], [{ input: [] }], [{ input: 'x', dimensions: 0 }], [{ input: 'x', encoding_format: 'hex' }]])('rejects %j', (body) => {
    expect(() => handleEmbeddings(body)).toThrow(SimError);
  });
});
