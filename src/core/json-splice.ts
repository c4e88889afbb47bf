/**
 * Replaces the values of top-level fields in raw JSON bytes, leaving every other byte as the client sent
 * it: faithful passthrough means the upstream sees the client's body, not our re-serialization of it
 * (number spelling, escapes, key order and whitespace all survive).
 *
 * Every top-level occurrence of a key is replaced: with duplicate keys most parsers take the last one, so
 * replacing only the first would let a client smuggle its own `model` past the endpoint binding.
 * Structural bytes ({ } [ ] " , :) are ASCII and never occur inside UTF-8 multi-byte sequences, so
 * scanning bytes is safe.
 */
import { byteCache } from '../byte-cache.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

function isSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

function skipSpace(buf: Buffer, i: number): number {
  while (isSpace(buf[i])) i++;
  return i;
}

/** Strings longer than this are crossed with a native indexOf instead of a byte loop (a 200k-character prompt is one string). */
const SHORT_STRING = 32;

/** Index just past the string starting at `i` (which is a quote). */
function skipString(buf: Buffer, i: number): number {
  const stop = Math.min(buf.length, i + SHORT_STRING);
  i++;
  while (i < stop) {
    const b = buf[i];
    if (b === BACKSLASH) i += 2;
    else if (b === QUOTE) return i + 1;
    else i++;
  }
  if (i >= buf.length) return -1;
  // Long string: jump from quote to quote; a quote preceded by an odd run of backslashes is escaped.
  for (let q = buf.indexOf(QUOTE, i); q !== -1; q = buf.indexOf(QUOTE, q + 1)) {
    let slashes = 0;
    while (buf[q - 1 - slashes] === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return q + 1;
  }
  return -1;
}

/** Index just past the value starting at `i`. */
function skipValue(buf: Buffer, i: number): number {
  const first = buf[i];
  if (first === QUOTE) return skipString(buf, i);
  if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
    let depth = 0;
    while (i < buf.length) {
      const b = buf[i];
      if (b === QUOTE) {
        i = skipString(buf, i);
        if (i === -1) return -1;
        continue;
      }
      if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
      else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  while (i < buf.length && buf[i] !== COMMA && buf[i] !== CLOSE_OBJECT && !isSpace(buf[i])) i++;
  return i;
}

interface Span {
  /** Where the member begins (its key's opening quote). */
  readonly keyStart: number;
  readonly start: number;
  readonly end: number;
  readonly key: string;
}

/** UTF-8 spellings of the keys callers splice: a handful of field names, encoded once. */
const utf8Of = byteCache(64);

/** The keys a scan looks for, with their plain UTF-8 spelling so most keys are matched without decoding. */
class KeySet {
  readonly #bytes: { readonly key: string; readonly utf8: Buffer }[];

  constructor(keys: Iterable<string>) {
    this.#bytes = [...keys].map((key) => ({ key, utf8: utf8Of(key) }));
  }

  /** The key spelled by the string token buf[start..end) (quotes included), or null when it is not one of ours. */
  match(buf: Buffer, start: number, end: number): string | null {
    const length = end - start - 2;
    for (const { key, utf8 } of this.#bytes) {
      if (utf8.length === length && buf.compare(utf8, 0, length, start + 1, end - 1) === 0) return key;
    }
    if (!hasEscape(buf, start + 1, end - 1)) return null;
    const decoded = decodeKey(buf, start, end);
    return this.#bytes.some((k) => k.key === decoded) ? decoded : null;
  }
}

function hasEscape(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] === BACKSLASH) return true;
  return false;
}

function decodeKey(buf: Buffer, start: number, end: number): string {
  const raw = buf.toString('utf8', start, end);
  return raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
}

/** Value spans of the given top-level keys (every member when `keys` is null), or null if the bytes are not a JSON object. */
function findTopLevelValues(buf: Buffer, keys: KeySet | null): Span[] | null {
  let i = skipSpace(buf, 0);
  if (buf[i] !== OPEN_OBJECT) return null;
  i = skipSpace(buf, i + 1);
  const spans: Span[] = [];
  if (buf[i] === CLOSE_OBJECT) return spans;
  for (;;) {
    if (buf[i] !== QUOTE) return null;
    const keyStart = i;
    const keyEnd = skipString(buf, i);
    if (keyEnd === -1) return null;
    const key = keys === null ? decodeKey(buf, i, keyEnd) : keys.match(buf, i, keyEnd);
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== COLON) return null;
    const start = skipSpace(buf, i + 1);
    const end = skipValue(buf, start);
    if (end === -1 || end === start) return null;
    if (key !== null) spans.push({ keyStart, start, end, key });
    i = skipSpace(buf, end);
    if (buf[i] === CLOSE_OBJECT) return spans;
    if (buf[i] !== COMMA) return null;
    i = skipSpace(buf, i + 1);
  }
}

/**
 * Returns `buf` with the value of every top-level occurrence of each key replaced by the given raw JSON
 * text; null when a key is absent or the bytes are not an object (the caller then re-serializes).
 */
export function spliceTopLevel(buf: Buffer, replacements: ReadonlyMap<string, string>): Buffer | null {
  const spans = findTopLevelValues(buf, new KeySet(replacements.keys()));
  if (!spans) return null;
  for (const key of replacements.keys()) if (!spans.some((s) => s.key === key)) return null;
  // One allocation: the client's bytes between spans are copied, each replacement written in place.
  let size = buf.length;
  for (const span of spans) size += Buffer.byteLength(replacements.get(span.key) ?? 'null') - (span.end - span.start);
  const out = Buffer.allocUnsafe(size);
  let from = 0;
  let to = 0;
  for (const span of spans) {
    to += buf.copy(out, to, from, span.start);
    to += out.write(replacements.get(span.key) ?? 'null', to);
    from = span.end;
  }
  buf.copy(out, to, from);
  return out;
}

/**
 * Returns `buf` without the top-level members named in `keys` (every occurrence), every other byte as the
 * client sent it; `buf` itself when none is present, null when the bytes are not an object.
 */
export function removeTopLevel(buf: Buffer, keys: ReadonlySet<string>): Buffer | null {
  const members = findTopLevelValues(buf, null);
  if (!members) return null;
  if (!members.some((m) => keys.has(m.key))) return buf;
  const kept = members.filter((m) => !keys.has(m.key));
  const first = members[0] as Span;
  const last = members[members.length - 1] as Span;
  const parts: Buffer[] = [buf.subarray(0, first.keyStart)];
  kept.forEach((m, k) => {
    // The separator before a kept member is the one written before it (a comma and its whitespace).
    const previous = members[members.indexOf(m) - 1];
    if (k > 0 && previous) parts.push(buf.subarray(previous.end, m.keyStart));
    parts.push(buf.subarray(m.keyStart, m.end));
  });
  parts.push(buf.subarray(last.end));
  return Buffer.concat(parts);
}
