import { describe, expect, it } from 'vitest';
import { EXACT_MAX_FLOATS, scan, scannable } from '../../../src/pool/exact-scan.js';

const D = 4;
// Three endpoints: 0 has labels 0-1, 1 has labels 2-4, 2 has label 5.
const starts = Int32Array.of(0, 2, 5, 6);
const rows = [
  [1, 0, 0, 0],
  [0.9, 0.1, 0, 0],
  [0, 1, 0, 0],
  [0, 0.8, 0.2, 0],
  [0, 0, 0, 1],
  [0.5, 0.5, 0.5, 0.5],
];
const vectors = (): Float32Array<ArrayBuffer> => Float32Array.from(rows.flat());
const index = () => {
  const i = scannable({ op: 'load', key: 'k', version: 1, file: 'unused', dimensions: D, starts, efSearch: 64, vectors: vectors() });
  if (!i) throw new Error('a 24-float index is scannable');
  return i;
};
const cosine = (a: readonly number[], b: readonly number[]): number => {
  const dot = a.reduce((s, x, i) => s + x * (b[i] as number), 0);
  return dot / (Math.hypot(...a) * Math.hypot(...b));
};
const query = (q: number[]): Float32Array<ArrayBuffer> => Float32Array.from(q);
const asMap = (out: ReturnType<typeof scan>): Map<number, number> => {
  if (!out.found) throw new Error('found');
  return new Map(Array.from(out.endpoints, (e, i) => [e, out.scores[i] as number]));
};

describe('exact scan of a small profile index', () => {
  it('scores each endpoint by its best cosine among the k nearest labels', () => {
    const q = [1, 0.2, 0, 0];
    const got = asMap(scan(index(), { key: 'k', version: 1, query: query(q), k: 3, allowed: null, exact: new Int32Array(0) }));
    // The 3 nearest labels: 1, 0 (endpoint 0), 5 (endpoint 2); endpoint 1's best (label 2) is 4th.
    const best0 = Math.max(cosine(q, rows[0] as number[]), cosine(q, rows[1] as number[]));
    expect([...got.keys()].sort()).toEqual([0, 2]);
    expect(got.get(0)).toBeCloseTo(best0, 5);
    expect(got.get(2)).toBeCloseTo(cosine(q, rows[5] as number[]), 5);
  });

  it('scores the incumbent over all its vectors even when none is among the k nearest', () => {
    const q = [1, 0.2, 0, 0];
    const got = asMap(scan(index(), { key: 'k', version: 1, query: query(q), k: 1, allowed: null, exact: Int32Array.of(1) }));
    const best1 = Math.max(...[2, 3, 4].map((l) => cosine(q, rows[l] as number[])));
    expect(got.get(1)).toBeCloseTo(best1, 5);
    expect(got.has(0)).toBe(true);
  });

  it('leaves out endpoints not allowed', () => {
    const got = asMap(scan(index(), { key: 'k', version: 1, query: query([1, 0, 0, 0]), k: 6, allowed: Int32Array.of(1, 2), exact: new Int32Array(0) }));
    expect([...got.keys()].sort()).toEqual([1, 2]);
  });

  it('keeps only indexes up to EXACT_MAX_FLOATS floats for the scan, normalized copies of the vectors', () => {
    const v = vectors();
    const i = scannable({ op: 'load', key: 'k', version: 1, file: 'unused', dimensions: D, starts, efSearch: 64, vectors: v });
    expect(i?.vectors).not.toBe(v);
    expect(Math.hypot(...Array.from(i?.vectors.subarray(0, D) ?? []))).toBeCloseTo(1, 6);
    const big = new Float32Array(EXACT_MAX_FLOATS + D);
    expect(scannable({ op: 'load', key: 'k', version: 1, file: 'unused', dimensions: D, starts: Int32Array.of(0, big.length / D), efSearch: 64, vectors: big })).toBeNull();
  });
});
