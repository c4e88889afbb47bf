// Small, dependency-free hashing and PRNG helpers. Everything the simulator
// generates must be a pure function of the request, so these replace
// Math.random() everywhere.

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over UTF-16 code units: cheap, stable across runs and platforms. */
export function fnv1a(text: string, basis: number = FNV_OFFSET): number {
  let h = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/**
 * Combines two 32-bit values with murmur3's finalizer so that nearby inputs
 * (choice 0 vs choice 1) land far apart; plain XOR would keep them correlated.
 */
export function mix32(a: number, b: number): number {
  let h = (a ^ Math.imul(b + 0x9e3779b9, 0x85ebca6b)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32: a tiny PRNG returning uint32 values; good enough for word picking. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Deterministic base62 identifier of the given length. */
export function base62Id(seed: number, length: number): string {
  const next = prng(seed);
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[next() % 62] ?? '0';
  return out;
}
