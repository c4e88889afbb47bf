/**
 * A refused body's long arrays, diagnosed by their first bad element, at any depth.
 *
 * zod makes an issue of every bad element of an array (and of every bad value of a record), and a body of
 * millions of them fits in the 8 MiB cap: 4M numbers as `stop` held the event loop 9 s, 2M numbers as one
 * message's `content` 4.9 s, and 2M as its `tool_calls` overflowed the stack (all found from outside). So
 * before a schema sees a body, every array (and record) longer than CHECKED_WHOLE that the schema would
 * check element by element is checked one element at a time, in order, and cut just after its first bad
 * element: the schema then meets one bad element at its place as sent, and names it as it would have.
 *
 * Exact, so a cut body is refused exactly when the body is: an element is judged by the schema that will
 * judge it (through optional, nullable, defaults and a pipe's input), and a union is looked into only
 * where the value's own shape picks one option (an array among non-arrays, an object among non-objects, or
 * a discriminated union's tag). Where that reading could be wrong, safeParseCut parses the body as sent.
 */
import { z } from 'zod';

/** Arrays and records of at most this many entries are left to the schema as they are. */
export const CHECKED_WHOLE = 64;

/** Schema depth followed at most (a lazy schema may refer to itself). */
const MAX_DEPTH = 32;

export interface CutBody {
  readonly value: unknown;
  /** Arrays and records cut short; 0 when `value` is the body as sent. */
  readonly cut: number;
}

/** The schema that checks the value as sent, through wrappers that do not change its shape. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < MAX_DEPTH; i++) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodNullable ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault ||
      s instanceof z.ZodNonOptional ||
      s instanceof z.ZodCatch ||
      s instanceof z.ZodReadonly ||
      s instanceof z.ZodLazy
    ) {
      s = s.unwrap() as z.ZodType;
    } else if (s instanceof z.ZodPipe) {
      s = s.in as z.ZodType;
    } else {
      return s;
    }
  }
  return s;
}

/** A schema no value fails: the entries of a collection of these make no issue, however many. */
const takesAnything = (schema: z.ZodType): boolean => {
  const s = unwrapped(schema);
  return s instanceof z.ZodUnknown || s instanceof z.ZodAny;
};

/** An array or record whose entries the schema checks one by one (each bad one an issue). */
function checksEntries(s: z.ZodType): boolean {
  if (s instanceof z.ZodArray) return !takesAnything(s.element as z.ZodType);
  if (s instanceof z.ZodRecord) {
    const key = unwrapped(s.keyType as z.ZodType);
    return !takesAnything(s.valueType as z.ZodType) || !(key instanceof z.ZodString && (key._zod.def.checks?.length ?? 0) === 0);
  }
  return false;
}

const reaches = new WeakMap<z.ZodType, boolean>();

/** Whether a value this schema checks can hold an array or record the schema checks element by element. */
export function reachesCollection(schema: z.ZodType, depth = 0): boolean {
  const known = reaches.get(schema);
  if (known !== undefined) return known;
  if (depth > MAX_DEPTH) return true;
  const s = unwrapped(schema);
  let found = false;
  if (checksEntries(s)) found = true;
  else if (s instanceof z.ZodObject) found = Object.values(s.shape as Record<string, z.ZodType>).some((field) => reachesCollection(field, depth + 1));
  else if (s instanceof z.ZodUnion) found = (s.options as readonly z.ZodType[]).some((option) => reachesCollection(option, depth + 1));
  reaches.set(schema, found);
  return found;
}

/**
 * Whether `value` holds, where `schema` checks it entry by entry, an array or record of more than
 * CHECKED_WHOLE entries (a hot-path acceptor leaves such a value to safeParseCut).
 */
export function checksLongCollection(schema: z.ZodType, value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH || !reachesCollection(schema)) return false;
  const s = unwrapped(schema);
  if (s instanceof z.ZodArray) {
    if (!Array.isArray(value)) return false;
    if (value.length > CHECKED_WHOLE) return true;
    const element = s.element as z.ZodType;
    return value.some((v) => checksLongCollection(element, v, depth + 1));
  }
  if (s instanceof z.ZodUnion) {
    const option = optionFor(s, value);
    return option !== null && checksLongCollection(option, value, depth + 1);
  }
  if (Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  if (s instanceof z.ZodObject) {
    const shape = s.shape as Record<string, z.ZodType>;
    for (const key in shape) if (Object.hasOwn(record, key) && checksLongCollection(shape[key] as z.ZodType, record[key], depth + 1)) return true;
    return false;
  }
  if (s instanceof z.ZodRecord) {
    const keys = Object.keys(record);
    return keys.length > CHECKED_WHOLE || keys.some((k) => checksLongCollection(s.valueType as z.ZodType, record[k], depth + 1));
  }
  return false;
}

/** `value` with the long arrays and records `schema` would check cut just after their first bad entry. */
export function cutLongCollections(schema: z.ZodType, value: unknown, depth = 0): CutBody {
  const same: CutBody = { value, cut: 0 };
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH || !reachesCollection(schema)) return same;
  const s = unwrapped(schema);
  if (s instanceof z.ZodArray) return Array.isArray(value) ? cutArray(s.element as z.ZodType, value, depth) : same;
  if (Array.isArray(value)) {
    const option = s instanceof z.ZodUnion ? optionFor(s, value) : null;
    return option ? cutLongCollections(option, value, depth + 1) : same;
  }
  const record = value as Record<string, unknown>;
  if (s instanceof z.ZodObject) return cutFields(s.shape as Record<string, z.ZodType>, record, depth);
  if (s instanceof z.ZodRecord) return cutRecord(s.keyType as z.ZodType, s.valueType as z.ZodType, record, depth);
  if (s instanceof z.ZodUnion) {
    const option = optionFor(s, record);
    return option ? cutLongCollections(option, value, depth + 1) : same;
  }
  return same;
}

function cutArray(element: z.ZodType, array: readonly unknown[], depth: number): CutBody {
  const long = array.length > CHECKED_WHOLE;
  let copy: unknown[] | null = null;
  let cut = 0;
  for (let i = 0; i < array.length; i++) {
    const inner = cutLongCollections(element, array[i], depth + 1);
    if (inner.cut > 0) {
      copy ??= array.slice();
      copy[i] = inner.value;
      cut += inner.cut;
    }
    if (long && !element.safeParse(inner.value).success) {
      if (i + 1 === array.length) break;
      return { value: (copy ?? array).slice(0, i + 1), cut: cut + 1 };
    }
  }
  return copy ? { value: copy, cut } : { value: array, cut: 0 };
}

function cutFields(shape: Record<string, z.ZodType>, object: Record<string, unknown>, depth: number): CutBody {
  let copy: Record<string, unknown> | null = null;
  let cut = 0;
  for (const key in shape) {
    const field = shape[key] as z.ZodType;
    if (!Object.hasOwn(object, key) || !reachesCollection(field)) continue;
    const inner = cutLongCollections(field, object[key], depth + 1);
    if (inner.cut === 0) continue;
    copy ??= { ...object };
    copy[key] = inner.value;
    cut += inner.cut;
  }
  return copy ? { value: copy, cut } : { value: object, cut: 0 };
}

function cutRecord(keyType: z.ZodType, valueType: z.ZodType, object: Record<string, unknown>, depth: number): CutBody {
  const keys = Object.keys(object);
  const long = keys.length > CHECKED_WHOLE;
  if (!long && !reachesCollection(valueType)) return { value: object, cut: 0 };
  let copy: Record<string, unknown> | null = null;
  let cut = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const inner = cutLongCollections(valueType, object[key], depth + 1);
    if (inner.cut > 0) {
      copy ??= { ...object };
      copy[key] = inner.value;
      cut += inner.cut;
    }
    if (long && !(keyType.safeParse(key).success && valueType.safeParse(inner.value).success)) {
      if (i + 1 === keys.length) break;
      const kept: Record<string, unknown> = {};
      for (const k of keys.slice(0, i + 1)) kept[k] = (copy ?? object)[k];
      return { value: kept, cut: cut + 1 };
    }
  }
  return copy ? { value: copy, cut } : { value: object, cut: 0 };
}

/**
 * The one option of a union that can accept `value` by its shape alone, or null when that is not clear
 * (the union then sees the value as sent). A discriminated union's option is the one its tag names.
 */
function optionFor(union: z.ZodUnion, value: object): z.ZodType | null {
  const isArray = Array.isArray(value);
  const options = (union.options as readonly z.ZodType[]).filter((option) => {
    const s = unwrapped(option);
    if (isArray) return s instanceof z.ZodArray || s instanceof z.ZodUnion || s instanceof z.ZodUnknown || s instanceof z.ZodAny;
    return s instanceof z.ZodObject || s instanceof z.ZodRecord || s instanceof z.ZodUnion || s instanceof z.ZodUnknown || s instanceof z.ZodAny;
  });
  if (options.length === 1) return options[0] as z.ZodType;
  if (isArray || !(union instanceof z.ZodDiscriminatedUnion)) return null;
  const tag = union.def.discriminator;
  const tagged = options.filter((option) => {
    const s = unwrapped(option);
    const field = s instanceof z.ZodObject ? (s.shape as Record<string, z.ZodType>)[tag] : undefined;
    return field !== undefined && field.safeParse((value as Record<string, unknown>)[tag]).success;
  });
  return tagged.length === 1 ? (tagged[0] as z.ZodType) : null;
}

/**
 * `schema.safeParse(value)` (or `parser`'s, a compiled form of it) on the value cut by cutLongCollections.
 * Should a cut value ever pass where the value as sent might not, the value as sent is parsed: a body is
 * never accepted shortened.
 */
export function safeParseCut<T>(schema: z.ZodType<T>, value: unknown, parser: { safeParse(v: unknown): z.ZodSafeParseResult<T> } = schema): z.ZodSafeParseResult<T> {
  const { value: cutValue, cut } = cutLongCollections(schema, value);
  const result = parser.safeParse(cutValue);
  return result.success && cut > 0 ? parser.safeParse(value) : result;
}
