/**
 * Field builders for wire schemas. Each attaches one requirement phrase to the type check and every
 * range check, so whichever fails, the client reads the whole rule (see issues.ts).
 */
import { z } from 'zod';
import { addIssue, needs } from './issues.js';

/**
 * Optional on the wire, with explicit null read as absent: common clients serialize unset options as
 * null, and SPEC treats null like omitted (e.g. `stream`: "null or omitted means non-streaming").
 */
export function absentIfNull<T extends z.ZodType>(schema: T) {
  return schema.nullable().optional().transform((v): z.output<T> | undefined => v ?? undefined);
}

export function numberBetween(min: number, max: number): z.ZodNumber {
  const rule = needs(`must be a number between ${min} and ${max}`);
  return z.number(rule).min(min, rule).max(max, rule);
}

/** Any integral JSON number: seeds above 2^53 are legitimate, so no safe-integer limit unless bounded. */
export function integer(requirement: string, bounds: { min?: number; max?: number } = {}): z.ZodNumber {
  const rule = needs(requirement);
  let schema = z.number(rule).refine(Number.isInteger, rule);
  if (bounds.min !== undefined) schema = schema.min(bounds.min, rule);
  if (bounds.max !== undefined) schema = schema.max(bounds.max, rule);
  return schema;
}

export const positiveInteger = (): z.ZodNumber => integer('must be a positive integer', { min: 1 });

export const boolean = (): z.ZodBoolean => z.boolean(needs('must be true or false'));

export const string = (requirement = 'must be a string'): z.ZodString => z.string(needs(requirement));

export const nonEmptyString = (requirement = 'must be a non-empty string'): z.ZodString =>
  z.string(needs(requirement)).min(1, needs(requirement));

/**
 * A language as ISO-639 (`en`, `deu`, with a region or script after `-` or `_`: `en-US`, `zh_Hant`): what
 * the transcription servers take (docs/decisions.md "Audio bodies"), on the HTTP routes and the realtime
 * socket alike.
 */
export const LANGUAGE_CODE = /^[A-Za-z]{2,3}([-_][A-Za-z0-9]+)?$/;
export const LANGUAGE_RULE = 'must be an ISO-639 code such as en';

export const languageCode = (): z.ZodString => string(LANGUAGE_RULE).regex(LANGUAGE_CODE, needs(LANGUAGE_RULE));

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, needs(`must be one of ${values.join(', ')}`));
}

/**
 * A JSON object (e.g. a JSON schema) whose inside the gateway forwards without looking. Not a z.record:
 * that copies every key into a new object, and an object of 300,000 keys (a `logit_bias` within the body
 * cap) took ~0.2 s a parse, twice a request (found from outside); the object is passed on as parsed.
 */
export const jsonObject = (requirement = 'must be a JSON object'): z.ZodType<Record<string, unknown>> =>
  z.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), needs(requirement));

/** SPEC "Other limits": metadata on chat requests and on webhook endpoints. */
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;
const METADATA_RULE = `must be an object of at most ${MAX_METADATA_PAIRS} pairs with keys of at most ${MAX_METADATA_KEY} characters and string values of at most ${MAX_METADATA_VALUE} characters`;

/** Whether `o` has more than `limit` own keys, without listing them all (Object.keys of 400,000 took ~0.5 s). */
function moreKeysThan(o: object, limit: number): boolean {
  let n = 0;
  for (const key in o) if (Object.hasOwn(o, key) && ++n > limit) return true;
  return false;
}

// Not a z.record, and the pairs counted before they are listed: a body of 400,000 pairs took 5 s of event
// loop to refuse (found from outside); now the count stops at the 17th key, then the pairs until the first bad one.
export const metadataField = () =>
  z
    .custom<Record<string, unknown>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), needs(METADATA_RULE))
    .superRefine((metadata, ctx) => {
      if (moreKeysThan(metadata, MAX_METADATA_PAIRS)) return addIssue(ctx, { message: METADATA_RULE, got: `more than ${MAX_METADATA_PAIRS} pairs` });
      const entries = Object.entries(metadata);
      for (const [key, value] of entries) {
        if (key.length > MAX_METADATA_KEY) return addIssue(ctx, { message: METADATA_RULE, got: `a key of ${key.length} characters` });
        if (typeof value !== 'string' || value.length > MAX_METADATA_VALUE) return addIssue(ctx, { path: [key], message: METADATA_RULE });
      }
    })
    // Checked just above: every value is a string.
    .transform((metadata) => metadata as Record<string, string>);
