/**
 * Hot-path acceptors for loose objects with many optional fields. A compiled zod object schema checks
 * every field it knows on every parse, present or not, and allocates for each; a chat request knows 35
 * and usually carries two or three. An acceptor checks only the fields an object carries, each with its
 * own compiled schema, then the object's rules between fields.
 *
 * An acceptor never refuses: anything it is not sure of (a failing field, a missing required field, a
 * broken rule, a key it will not copy) reads as NOT_ACCEPTED, and the caller runs the whole schema, which
 * stays the one authority on what is refused and how the refusal reads. What it does accept, it returns
 * as that schema would (docs/decisions.md "Hot-path choices").
 */
import { z } from 'zod';
import { checksLongCollection, reachesCollection } from './long-arrays.js';

export const NOT_ACCEPTED: unique symbol = Symbol('not accepted');

/** The value as its schema outputs it, or NOT_ACCEPTED. A sentinel, not a result object: nothing to allocate. */
export type Acceptor = (value: unknown) => unknown;

export function compiledAcceptor(schema: z.ZodType): Acceptor {
  // strict: a schema the compiler cannot model fails at import, in every test run, rather than going slow.
  const compiled = z.compile(schema, { strict: true });
  // A long array or record goes to the whole schema's cut (long-arrays.ts): parsed here, millions of bad
  // entries would each make an issue. A string or a number is never one, and costs a typeof.
  const guarded = reachesCollection(schema);
  return (value) => {
    if (guarded && typeof value === 'object' && checksLongCollection(schema, value)) return NOT_ACCEPTED;
    const result = compiled.safeParse(value);
    return result.success ? result.data : NOT_ACCEPTED;
  };
}

/** One compiled acceptor per field of an object shape. */
export function compiledAcceptors(fields: Readonly<Record<string, z.ZodType>>): Record<string, Acceptor> {
  return Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, compiledAcceptor(schema)]));
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface LooseObjectRules {
  /** Fields the schema requires (present and not null). */
  readonly required: readonly string[];
  /** The schema's rules between fields, over the checked object; false leaves the verdict to the schema. */
  readonly holds: (checked: Record<string, unknown>) => boolean;
}

/**
 * A loose object: unknown keys are copied untouched, known ones replaced by their checked value (as zod
 * does, a field sent as null and read as absent stays a key, holding undefined).
 */
export function looseObjectAcceptor(fields: Readonly<Record<string, Acceptor>>, rules: LooseObjectRules): Acceptor {
  const byName: ReadonlyMap<string, Acceptor> = new Map(Object.entries(fields));
  return (value) => {
    if (!isJsonObject(value)) return NOT_ACCEPTED;
    for (const name of rules.required) if (value[name] == null) return NOT_ACCEPTED;
    const checked: Record<string, unknown> = {};
    for (const name of Object.keys(value)) {
      // Copied by assignment, this key would set the copy's prototype instead of a field.
      if (name === '__proto__') return NOT_ACCEPTED;
      const field = byName.get(name);
      const out = field === undefined ? value[name] : field(value[name]);
      if (out === NOT_ACCEPTED) return NOT_ACCEPTED;
      checked[name] = out;
    }
    return rules.holds(checked) ? checked : NOT_ACCEPTED;
  };
}

/** An array of at least `min` elements, each accepted by `element`. */
export function arrayAcceptor(element: Acceptor, min: number): Acceptor {
  return (value) => {
    if (!Array.isArray(value) || value.length < min) return NOT_ACCEPTED;
    const checked: unknown[] = [];
    for (const item of value) {
      const out = element(item);
      if (out === NOT_ACCEPTED) return NOT_ACCEPTED;
      checked.push(out);
    }
    return checked;
  };
}
