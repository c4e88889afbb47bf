import { describe, expect, it } from 'vitest';
import { clientEmbeddings } from '../../../../src/core/embeddings/embedding-response.js';
import { conformedVectors } from '../../../../src/core/embeddings/vector-encoding.js';
import { GatewayError } from '../../../../src/errors.js';

/** What OpenAI sends for encoding_format base64: little-endian float32. */
const base64Of = (v: number[]): string => {
  const b = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b.toString('base64');
};
const floats = [0.5, -0.25, 0.1, 3];
const asFloat32 = (v: number[]): number[] => Array.from(Float32Array.from(v));
const float = { encodingFormat: 'float', dimensions: null } as const;
const base64 = { encodingFormat: 'base64', dimensions: null } as const;

describe('conformedVectors', () => {
  // Was: number arrays went back to a client that asked for base64; the openai SDK decoded each as base64
  // into a wrong vector, with no error.
  it('encodes number arrays as base64 little-endian float32 when base64 was asked', () => {
    expect(conformedVectors([{ object: 'embedding', index: 0, embedding: floats }], base64)).toEqual([{ object: 'embedding', index: 0, embedding: base64Of(floats) }]);
  });

  it('decodes base64 vectors into numbers when float was asked', () => {
    expect(conformedVectors([{ index: 0, embedding: base64Of(floats) }], float)).toEqual([{ index: 0, embedding: asFloat32(floats) }]);
  });

  it('leaves an answer already in the asked shape alone (null), and items that carry no vector', () => {
    expect(conformedVectors([{ embedding: floats }], float)).toBeNull();
    expect(conformedVectors([{ embedding: base64Of(floats) }], base64)).toBeNull();
    expect(conformedVectors('not a list', base64)).toBeNull();
    expect(conformedVectors([{ embedding: floats }, 'odd', { embedding: null }], base64)).toEqual([{ embedding: base64Of(floats) }, 'odd', { embedding: null }]);
  });

  it('refuses a vector of another size than dimensions asked with 400 unsupported_parameter, in either shape', () => {
    for (const embedding of [floats, base64Of(floats)]) {
      for (const encodingFormat of ['float', 'base64'] as const) {
        const err = (() => {
          try {
            conformedVectors([{ embedding }], { encodingFormat, dimensions: 8 });
          } catch (e) {
            return e;
          }
          return null;
        })();
        expect(err).toBeInstanceOf(GatewayError);
        expect(err).toMatchObject({ code: 'unsupported_parameter', param: 'dimensions' });
        expect((err as GatewayError).message).toContain('4 dimensions, not the 8 asked');
      }
    }
    expect(conformedVectors([{ embedding: floats }], { encodingFormat: 'float', dimensions: 4 })).toBeNull();
  });

  it('refuses vectors it cannot convert with internal_error', () => {
    expect(() => conformedVectors([{ embedding: [1, 'x'] }], base64)).toThrow(GatewayError);
    expect(() => conformedVectors([{ embedding: 'AAAAAAA=' }], float)).toThrow(/not a whole number of float32/);
  });
});

describe('clientEmbeddings with the shape asked', () => {
  it('rewrites the body only when a vector was converted, keeping the other fields and echoing model', () => {
    const raw = Buffer.from(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: floats }], model: 'up', usage: { prompt_tokens: 2, total_tokens: 2 } }));
    const out = clientEmbeddings(raw, 'mine', 'x', 'an embeddings', base64);
    expect(JSON.parse(out.body.toString())).toEqual({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: base64Of(floats) }], model: 'mine', usage: { prompt_tokens: 2, total_tokens: 2 } });
    expect(out.usage).toEqual({ promptTokens: 2, source: 'upstream' });
    const same = clientEmbeddings(raw, 'mine', 'x', 'an embeddings', float);
    expect(same.body.toString()).toBe(raw.toString().replace('"up"', '"mine"'));
  });
});
