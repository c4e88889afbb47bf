/**
 * Compiling tool schemas and validating arguments with them (issue 31): the work that runs on the schema
 * threads (src/pool/schema-pool.ts), and in-process where no gateway is involved (the reference agent's
 * start-up check). Compiled validators are cached by the schema's key, the sha256 of its canonical JSON:
 * an agent reconnecting with the same manifest, or two agents sharing a tool, compile it once.
 *
 * ajv runs with `strict: false` (manifests carry annotations for other clients: `examples`, `x-*`, formats
 * ajv does not know; see src/exec/agents/manifest.ts) and `allowMatchingProperties` (whatever strict
 * says, ajv then never tests a `patternProperties` key with V8's engine at compile time). Every pattern
 * goes through the linear-time engine (linear-regexp.ts). No `format` is registered (ajv-formats is not
 * loaded), so `format` is an annotation and brings no regular expression of its own.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { linearRegExpEngine, PatternError } from './linear-regexp.js';
import type { ArgumentsValidator } from './tool-arguments.js';

/** Validators kept per thread: far more tools than any deployment serves at once, small enough to hold. */
export const MAX_CACHED_VALIDATORS = 2048;

export type ArgumentsVerdict =
  | { readonly kind: 'valid' }
  /** `pointer`: JSON pointer of the offending value (where a missing property belongs). */
  | { readonly kind: 'invalid'; readonly pointer: string; readonly message: string }
  | { readonly kind: 'unusable'; readonly message: string };

export interface SchemaCompiler {
  /** Why the schema cannot be used (a sentence tail naming what is wrong), or null. */
  check(schema: Record<string, unknown>): string | null;
  validate(key: string, schema: Record<string, unknown>, args: Record<string, unknown>): ArgumentsVerdict;
}

/** JSON with every object's keys sorted, recursively; arrays keep their order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The cache key of a schema: hex sha256 of its canonical JSON. */
export const schemaKey = (schema: Record<string, unknown>): string => createHash('sha256').update(canonicalJson(schema)).digest('hex');

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

function pointerOf(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required' && typeof params.missingProperty === 'string') return `${e.instancePath}/${escapePointer(params.missingProperty)}`;
  if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    return `${e.instancePath}/${escapePointer(params.additionalProperty)}`;
  }
  return e.instancePath;
}

export function createSchemaCompiler(): SchemaCompiler {
  // `addUsedSchema: false`: a `$id` claims no global name the next manifest's tool could collide with.
  const ajv = new Ajv({ strict: false, allowMatchingProperties: true, logger: false, addUsedSchema: false, allErrors: false, code: { regExp: linearRegExpEngine } });
  /** By key, least recently used first (a Map iterates in insertion order; a hit is moved to the end). */
  const cache = new Map<string, ValidateFunction>();

  function compile(schema: Record<string, unknown>): ValidateFunction {
    try {
      return ajv.compile(schema);
    } finally {
      // ajv also keeps every compiled schema by object; ours are kept (or not) in the cache above.
      ajv.removeSchema(schema);
    }
  }

  function validatorOf(key: string, schema: Record<string, unknown>): ValidateFunction {
    let validate = cache.get(key);
    if (validate) {
      cache.delete(key);
    } else {
      validate = compile(schema);
      if (cache.size >= MAX_CACHED_VALIDATORS) cache.delete(cache.keys().next().value as string);
    }
    cache.set(key, validate);
    return validate;
  }

  return {
    check(schema) {
      if (schema.type !== undefined && schema.type !== 'object') return 'must describe an object (arguments are a JSON object): type must be "object" or absent';
      try {
        validatorOf(schemaKey(schema), schema);
        return null;
      } catch (err) {
        if (err instanceof PatternError) return `cannot be used: ${err.message}`;
        return `is not a usable JSON Schema: ${(err as Error).message}`;
      }
    },
    validate(key, schema, args) {
      let validate: ValidateFunction;
      try {
        validate = validatorOf(key, schema);
      } catch (err) {
        return { kind: 'unusable', message: (err as Error).message };
      }
      if (validate(args)) return { kind: 'valid' };
      const first = validate.errors?.[0];
      return { kind: 'invalid', pointer: first ? pointerOf(first) : '', message: first?.message ?? 'does not match the schema' };
    },
  };
}

/**
 * Arguments checked on the calling thread: for unit tests and tools, never a gateway's event loop
 * (schema-pool.ts). It ignores the tenant: a check here waits behind no one else's.
 */
export function inProcessValidator(compiler: SchemaCompiler = createSchemaCompiler()): ArgumentsValidator {
  return { validate: (schema, args) => Promise.resolve(compiler.validate(schemaKey(schema), schema, args)) };
}
