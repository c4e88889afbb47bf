import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SearchIndexOutput } from '../../../src/pool/tasks.js';
import { embedText } from '../../../src/simulator/embeddings.js';
import similarity from '../../../workers/similarity.js';

const dir = mkdtempSync(join(tmpdir(), 'similarity-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DIMS = 64;
const profiles = [
  ['integral of x squared', 'derivative of sin x', 'solve the equation'],
  ['recipe for dinner', 'bake bread at home'],
  ['describe this photo', 'what is in this picture', 'caption the image'],
];
const vec = (text: string): Float32Array<ArrayBuffer> => Float32Array.from(embedText(text, DIMS));

function load(key: string, version: number): void {
  const flat = profiles.flat();
  const vectors = new Float32Array(flat.length * DIMS);
  flat.forEach((t, i) => vectors.set(vec(t), i * DIMS));
  const file = join(dir, `${key}-${version}.hnsw`);
  expect(similarity({ op: 'build', file, dimensions: DIMS, vectors, m: 16, efConstruction: 100 })).toEqual({ count: 8 });
  const starts = Int32Array.from([0, 3, 5, 8]);
  expect(similarity({ op: 'load', key, version, file, dimensions: DIMS, starts, efSearch: 32, vectors: vectors.slice() })).toEqual({ count: 8 });
}

function search(key: string, version: number, text: string, extra: { allowed?: number[]; exact?: number[]; k?: number } = {}): SearchIndexOutput {
  return similarity({
    op: 'search',
    key,
    version,
    query: vec(text),
    k: extra.k ?? 2,
    allowed: extra.allowed ? Int32Array.from(extra.allowed) : null,
    exact: Int32Array.from(extra.exact ?? []),
  }) as SearchIndexOutput;
}

const best = (r: SearchIndexOutput): Record<number, number> => (r.found ? Object.fromEntries([...r.endpoints].map((e, i) => [e, r.scores[i] ?? 0])) : {});

describe('workers/similarity', () => {
  load('ws', 1);

  it('scores each endpoint by its best profile vector among the k nearest', () => {
    const scores = best(search('ws', 1, 'the derivative of x cubed'));
    expect(Object.keys(scores)).toContain('0');
    expect(scores[0]).toBeGreaterThan(0.3);
    expect(Math.max(...Object.values(scores))).toBe(scores[0]);
  });

  it('searches only the allowed endpoints', () => {
    const scores = best(search('ws', 1, 'the derivative of x cubed', { allowed: [1, 2], k: 5 }));
    expect(Object.keys(scores).sort()).toEqual(['1', '2']);
  });

  it('scores the requested endpoints exactly even outside the k nearest', () => {
    const scores = best(search('ws', 1, 'the derivative of x cubed', { k: 1, exact: [1] }));
    expect(Object.keys(scores).sort()).toEqual(['0', '1']);
    const cosine = Math.max(...profiles[1]!.map((t) => embedText(t, DIMS).reduce((s, x, i) => s + x * (vec('the derivative of x cubed')[i] ?? 0), 0)));
    expect(scores[1]).toBeCloseTo(cosine, 4);
  });

  it('answers found: false for a version it does not hold, so the caller reloads', () => {
    expect(search('ws', 2, 'x')).toEqual({ found: false });
    expect(search('other', 1, 'x')).toEqual({ found: false });
  });

  it('answers a batch of searches in order', () => {
    const one = (text: string) => ({ key: 'ws', version: 1, query: vec(text), k: 2, allowed: null, exact: new Int32Array(0) });
    const out = similarity({ op: 'search-batch', searches: [one('derivative of x'), one('bake bread'), { ...one('x'), version: 9 }] }) as SearchIndexOutput[];
    expect(out.map((r) => r.found)).toEqual([true, true, false]);
    const top = (r: SearchIndexOutput): number => (r.found ? (r.endpoints[[...r.scores].indexOf(Math.max(...r.scores))] ?? -1) : -1);
    expect([top(out[0] as SearchIndexOutput), top(out[1] as SearchIndexOutput)]).toEqual([0, 1]);
  });

  it('replaces a key on load of a newer version', () => {
    load('ws', 3);
    expect(search('ws', 1, 'x')).toEqual({ found: false });
    expect(search('ws', 3, 'x').found).toBe(true);
  });
});
