/**
 * A small, seeded JSON mutation engine for the fuzz suite (test/reliability/fuzz.test.ts): a PRNG, a value
 * tree that can also hold what JSON.stringify cannot write (duplicate keys, 1e400, -0, 30-digit numbers,
 * nesting deeper than the serializer's stack), and the mutations applied to a valid body. No dependency:
 * the same seed must give the same bodies on every machine and every Node release we run.
 */

/** Raw JSON text written as is. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object written member by member, in order, duplicates allowed (JSON.parse keeps the last one). */
export class Members {
  constructor(readonly entries: readonly (readonly [string, FuzzValue])[]) {}
}

export type FuzzValue = null | boolean | number | string | RawJson | Members | FuzzValue[] | FuzzObject;
export interface FuzzObject {
  [key: string]: FuzzValue;
}
export type Path = readonly (string | number)[];

/** mulberry32: 32 bits of state, good enough to pick mutations and identical everywhere. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** 0 <= n < bound */
  int(bound: number): number {
    return Math.floor(this.next() * bound);
  }

  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)] as T;
  }

  weighted<T>(table: readonly (readonly [T, number])[]): T {
    const total = table.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [item, w] of table) {
      roll -= w;
      if (roll < 0) return item;
    }
    return (table[table.length - 1] as readonly [T, number])[0];
  }
}

/** A seed per case, so one case is generated (and reproduced) without generating the ones before it. */
export function caseSeed(seed: number, index: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  return (h ^ (h >>> 15)) >>> 0;
}

export function isPlainObject(v: FuzzValue | undefined): v is FuzzObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RawJson) && !(v instanceof Members);
}

/** Sets an own property even for `__proto__` (assignment would change the prototype instead). */
export function define(obj: FuzzObject, key: string, value: FuzzValue): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function serialize(v: FuzzValue): string {
  if (v instanceof RawJson) return v.text;
  if (v instanceof Members) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (isPlainObject(v)) return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${serialize(v[k] as FuzzValue)}`).join(',')}}`;
  return JSON.stringify(v);
}

/** `messages[0].content` */
export function renderPath(path: Path): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '') || '(root)';
}

/** Every node under the root (plain containers only; raw text and member lists are leaves). */
export function nodePaths(root: FuzzValue, maxDepth = 8): Path[] {
  const out: Path[] = [];
  const walk = (v: FuzzValue, path: Path): void => {
    if (path.length >= maxDepth) return;
    const children: [string | number, FuzzValue][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : isPlainObject(v) ? Object.keys(v).map((k) => [k, v[k] as FuzzValue]) : [];
    for (const [seg, child] of children) {
      const p = [...path, seg];
      out.push(p);
      walk(child, p);
    }
  };
  walk(root, []);
  return out;
}

export function getAt(root: FuzzValue, path: Path): FuzzValue | undefined {
  let v: FuzzValue | undefined = root;
  for (const seg of path) {
    if (Array.isArray(v) && typeof seg === 'number') v = v[seg];
    else if (isPlainObject(v) && typeof seg === 'string') v = Object.hasOwn(v, seg) ? v[seg] : undefined;
    else return undefined;
  }
  return v;
}

function parentOf(root: FuzzValue, path: Path): { parent: FuzzValue | undefined; last: string | number | undefined } {
  return { parent: getAt(root, path.slice(0, -1)), last: path[path.length - 1] };
}

export function setAt(root: FuzzValue, path: Path, value: FuzzValue): void {
  const { parent, last } = parentOf(root, path);
  if (Array.isArray(parent) && typeof last === 'number') parent[last] = value;
  else if (isPlainObject(parent) && typeof last === 'string') define(parent, last, value);
}

export function deleteAt(root: FuzzValue, path: Path): void {
  const { parent, last } = parentOf(root, path);
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else if (isPlainObject(parent) && typeof last === 'string') Reflect.deleteProperty(parent, last);
}

const LOREM = 'lorem ipsum dolor sit amet, consectetur adipiscing elit; ';
export const longString = (n: number): string => LOREM.repeat(Math.ceil(n / LOREM.length)).slice(0, n);
/** Built as text: a tree this deep would overflow serialize() (and JSON.stringify). */
export const deepArray = (n: number): RawJson => new RawJson(`${'['.repeat(n)}${']'.repeat(n)}`);
export const deepObject = (n: number): RawJson => new RawJson(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);

/** Replacement values of another JSON type (or the same type at its edges). */
export const RETYPED: readonly (readonly [string, () => FuzzValue])[] = [
  ['null', () => null],
  ['0', () => 0],
  ['-1', () => -1],
  ['1e308', () => 1e308],
  ['-1e308', () => -1e308],
  ['1e400 (Infinity when parsed)', () => new RawJson('1e400')],
  ['-0', () => new RawJson('-0')],
  ['2^53+1', () => new RawJson('9007199254740993')],
  ['a 30-digit integer', () => new RawJson('123456789012345678901234567890')],
  ['5e-324', () => new RawJson('5e-324')],
  ['0.5', () => 0.5],
  ['-2.75', () => -2.75],
  ['true', () => true],
  ['false', () => false],
  ['"text"', () => 'text'],
  ['"42"', () => '42'],
  ['""', () => ''],
  ['a 100k-character string', () => longString(100_000)],
  ['[]', () => []],
  ['a mixed array', () => [1, 'two', null, {}, [false]]],
  ['an array of 5000 numbers', () => Array.from({ length: 5000 }, (_, i) => i)],
  ['a nested array', () => [[[['deep']]]]],
  ['{}', () => ({})],
  ['an object', () => ({ a: 1, b: { c: [null] } })],
  ['arrays nested 1000 deep', () => deepArray(1000)],
  ['objects nested 1000 deep', () => deepObject(1000)],
];

/** Nesting past what a recursive walk survives (JSON.stringify overflows its stack near 4000 levels). */
const DEEP: readonly (readonly [string, () => RawJson])[] = [
  ['arrays nested 1000 deep', () => deepArray(1000)],
  ['objects nested 1000 deep', () => deepObject(1000)],
  ['arrays nested 50000 deep', () => deepArray(50_000)],
  ['objects nested 20000 deep', () => deepObject(20_000)],
];

/** Strings that break naive handling: controls, lone surrogates, bidi and zero-width marks, injections. */
export const WEIRD_STRINGS: readonly string[] = [
  '\u0000',
  'nul\u0000inside',
  '\u0001\u0007\u0008\u001b[31m\u001f\u007f',
  '\r\n\r\nHTTP/1.1 200 OK\r\nX-Injected: 1\r\n\r\n',
  '\ud800',
  '\udfff',
  'trailing high \ud83d',
  '\udc00\ud800 reversed pair',
  '\u202eevil\u202c \u200b\u200c\u200d \ufeff',
  '\u2028\u2029',
  '\ufffe\uffff',
  '👩‍👩‍👧‍👦🏳️‍🌈🧑🏽‍🚀',
  'Z̸̢͎̈́a̵̛l̷̪͠g̸̱̓o̶',
  '中文字符 العربية עברית ελληνικά',
  '<script>alert(1)</script>',
  "'; DROP TABLE api_keys; --",
  '../../../../etc/passwd',
  '${jndi:ldap://127.0.0.1/x}{{7*7}}%s%n',
  '\\u0000 \\" \\\\',
  ' ',
  '\t\n',
];

/** Keys for unknown fields. Never `sim`: the simulator reads it as knobs that inject upstream failures. */
export const WEIRD_KEYS: readonly string[] = [
  'extra',
  'x_unknown_field',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '',
  ' ',
  'Model',
  'MESSAGES',
  '$where',
  'a.b',
  'a[0]',
  '\u0000',
  '\ud800',
  '👩‍👩‍👧',
  'k'.repeat(5000),
];

export type StructuralKind = 'drop' | 'retype' | 'weird_string' | 'extra_field' | 'duplicate_key' | 'deep_nesting';

export interface Mutation {
  readonly value: FuzzValue;
  readonly detail: string;
}

/** Half the time a top-level field (where validation is densest), otherwise any node. */
function pickPath(rng: Rng, root: FuzzValue): Path | null {
  const all = nodePaths(root);
  if (all.length === 0) return null;
  const top = all.filter((p) => p.length === 1);
  return rng.chance(0.5) && top.length > 0 ? rng.pick(top) : rng.pick(all);
}

function containerPaths(root: FuzzValue): Path[] {
  return [[], ...nodePaths(root).filter((p) => isPlainObject(getAt(root, p)))];
}

/** Applies one structural mutation to `root` (in place; the caller's body is its own). */
export function mutateStructure(rng: Rng, root: FuzzValue, kind: StructuralKind): Mutation {
  switch (kind) {
    case 'drop': {
      const path = pickPath(rng, root);
      if (!path) return { value: root, detail: 'drop: nothing to drop' };
      deleteAt(root, path);
      return { value: root, detail: `drop ${renderPath(path)}` };
    }
    case 'retype': {
      const path = pickPath(rng, root);
      const [label, make] = rng.pick(RETYPED);
      if (!path) return { value: make(), detail: `retype (root) := ${label}` };
      setAt(root, path, make());
      return { value: root, detail: `retype ${renderPath(path)} := ${label}` };
    }
    case 'weird_string': {
      const strings = nodePaths(root).filter((p) => typeof getAt(root, p) === 'string');
      const path = strings.length > 0 && rng.chance(0.8) ? rng.pick(strings) : pickPath(rng, root);
      const weird = rng.pick(WEIRD_STRINGS);
      const old = path ? getAt(root, path) : undefined;
      // Sometimes keep the valid text around the weird part, so the value still passes its own rule.
      const value = typeof old === 'string' && rng.chance(0.5) ? `${old}${weird}` : weird;
      if (!path) return { value, detail: `weird string at (root): ${JSON.stringify(weird)}` };
      setAt(root, path, value);
      return { value: root, detail: `weird string at ${renderPath(path)}: ${JSON.stringify(value).slice(0, 80)}` };
    }
    case 'extra_field': {
      const at = rng.pick(containerPaths(root));
      const key = rng.pick(WEIRD_KEYS);
      const [label, make] = rng.pick(RETYPED);
      const target = getAt(root, at);
      if (isPlainObject(target)) define(target, key, make());
      return { value: root, detail: `extra field ${JSON.stringify(key.slice(0, 20))} := ${label} in ${renderPath(at)}` };
    }
    case 'deep_nesting': {
      // Anywhere, not mostly top-level: the nested objects (tools, tool calls) are where walks recurse.
      const [label, make] = rng.pick(DEEP);
      const all = nodePaths(root);
      if (all.length === 0 || rng.chance(0.3)) {
        const at = rng.pick(containerPaths(root));
        const target = getAt(root, at);
        if (isPlainObject(target)) define(target, 'nested', make());
        return { value: root, detail: `extra field "nested" := ${label} in ${renderPath(at)}` };
      }
      const path = rng.pick(all);
      setAt(root, path, make());
      return { value: root, detail: `${renderPath(path)} := ${label}` };
    }
    case 'duplicate_key': {
      const [label, make] = rng.pick(RETYPED);
      const candidates = containerPaths(root).filter((p) => Object.keys(getAt(root, p) as FuzzObject).length > 0);
      if (candidates.length === 0) return { value: new Members([['extra', make()], ['extra', 'again']]), detail: `duplicate key extra (${label} first)` };
      const at = rng.pick(candidates);
      const obj = getAt(root, at) as FuzzObject;
      const key = rng.pick(Object.keys(obj));
      const original = obj[key] as FuzzValue;
      // Either order: the last one wins in JSON.parse, so both "valid then bad" and "bad then valid" matter.
      const badFirst = rng.chance(0.5);
      const entries = Object.keys(obj).flatMap((k): [string, FuzzValue][] =>
        k !== key ? [[k, obj[k] as FuzzValue]] : badFirst ? [[k, make()], [k, original]] : [[k, original], [k, make()]],
      );
      const replacement = new Members(entries);
      if (at.length === 0) return { value: replacement, detail: `duplicate key ${key} (${badFirst ? `${label} first` : `${label} last`})` };
      setAt(root, at, replacement);
      return { value: root, detail: `duplicate key ${renderPath([...at, key])} (${badFirst ? `${label} first` : `${label} last`})` };
    }
  }
}

/** Invalid UTF-8: a stray continuation byte, an overlong encoding, a CESU surrogate, a cut sequence, 0xff. */
const BAD_UTF8: readonly (readonly [string, Buffer])[] = [
  ['0xff', Buffer.from([0xff])],
  ['a stray continuation byte', Buffer.from([0x80])],
  ['an overlong "/"', Buffer.from([0xc0, 0xaf])],
  ['an encoded surrogate (CESU-8)', Buffer.from([0xed, 0xa0, 0x80])],
  ['a cut 3-byte sequence', Buffer.from([0xe2, 0x82])],
  ['a code point past U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80])],
];

/** Inserts invalid UTF-8 right after an opening quote (inside a string), or anywhere. */
export function withInvalidUtf8(rng: Rng, text: Buffer): { bytes: Buffer; detail: string } {
  const quotes: number[] = [];
  for (let i = text.indexOf(0x22); i !== -1; i = text.indexOf(0x22, i + 1)) quotes.push(i);
  const at = quotes.length > 0 && rng.chance(0.8) ? rng.pick(quotes) + 1 : rng.int(text.length + 1);
  const [label, bad] = rng.pick(BAD_UTF8);
  return { bytes: Buffer.concat([text.subarray(0, at), bad, text.subarray(at)]), detail: `${label} at byte ${at}` };
}

export function truncated(rng: Rng, text: Buffer): { bytes: Buffer; detail: string } {
  const at = rng.int(Math.max(1, text.length - 1)) + (text.length > 1 ? 1 : 0);
  return { bytes: text.subarray(0, at), detail: `cut at byte ${at} of ${text.length}` };
}

export const NON_OBJECTS: readonly (readonly [string, (valid: string) => string])[] = [
  ['[]', () => '[]'],
  ['the valid body in an array', (valid) => `[${valid}]`],
  ['a string', () => '"hello"'],
  ['the valid body as a JSON string', (valid) => JSON.stringify(valid)],
  ['a number', () => '42'],
  ['null', () => 'null'],
  ['true', () => 'true'],
  ['whitespace only', () => ' \r\n\t '],
  ['two objects', (valid) => `${valid}${valid}`],
  ['a BOM before the object', (valid) => `\ufeff${valid}`],
  ['trailing garbage', (valid) => `${valid} x`],
  ['a comment', (valid) => `/* c */${valid}`],
  ['single quotes', () => "{'model': 'x'}"],
  ['NaN', () => '{"model": NaN}'],
];
