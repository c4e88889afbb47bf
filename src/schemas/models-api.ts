/**
 * Wire rules of the Models API (SPEC "Models, endpoints, reranking": POST, PATCH, DELETE under the
 * inference scope, shapes not shown) and of the SLOs routes (SPEC names them, shapes not shown). Strict
 * bodies: a misspelt field is an error, not a silent no-op. docs/decisions.md "Rerank, SLOs and model
 * aliases" has the shapes.
 */
import { z } from 'zod';
import { absentIfNull, nonEmptyString } from './fields.js';
import { needs, parseStrictBody } from './issues.js';

/** Long enough for any Hugging Face repo id with a revision; short enough to log. */
export const MAX_ALIAS_LENGTH = 256;
const ALIAS_RULE = `must be a string of 1 to ${MAX_ALIAS_LENGTH} characters without surrounding whitespace or control characters`;
const aliasId = z
  .string(needs(ALIAS_RULE))
  .min(1, needs(ALIAS_RULE))
  .max(MAX_ALIAS_LENGTH, needs(ALIAS_RULE))
  .refine((s) => s.trim() === s && !/[\u0000-\u001f\u007f]/.test(s), needs(ALIAS_RULE));

const aliasCreate = z.strictObject({ id: aliasId, target: nonEmptyString() }, needs('must be a JSON object'));
const aliasUpdate = z.strictObject({ target: nonEmptyString() }, needs('must be a JSON object'));

export type AliasCreate = z.infer<typeof aliasCreate>;
export type AliasUpdate = z.infer<typeof aliasUpdate>;

export const parseAliasCreate = (body: unknown): AliasCreate => parseStrictBody(aliasCreate, body, ['id', 'target']);
export const parseAliasUpdate = (body: unknown): AliasUpdate => parseStrictBody(aliasUpdate, body, ['target']);

const OBJECTIVE_RULE = 'must be a positive number of milliseconds, or null';
const objective = absentIfNull(z.number(needs(OBJECTIVE_RULE)).positive(needs(OBJECTIVE_RULE)).max(3_600_000, needs(OBJECTIVE_RULE)));
const sloPut = z.strictObject({ endpoint: nonEmptyString(), ttft_ms: objective, tpot_ms: objective }, needs('must be a JSON object'));

export type SloPut = z.infer<typeof sloPut>;

export const parseSloPut = (body: unknown): SloPut => parseStrictBody(sloPut, body, ['endpoint', 'ttft_ms', 'tpot_ms']);
