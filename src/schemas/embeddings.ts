/**
 * Wire rules of POST .../v1/embeddings (SPEC names the family but shows no body; we follow the widely
 * used embeddings API). The body is loose: fields we do not know are the model server's business and are
 * forwarded untouched, like every other byte except `model`.
 */
import { z } from 'zod';
import { absentIfNull, nonEmptyString, oneOf, positiveInteger, string } from './fields.js';
import { addIssue, issueToGatewayError, needs } from './issues.js';
import { safeParseCut } from './long-arrays.js';

/** One text, or the token ids of one text. */
export type EmbeddingInput = string | readonly string[] | readonly number[] | readonly (readonly number[])[];

const INPUT_RULE = 'must be a non-empty string, or a non-empty array of non-empty strings, of token ids, or of non-empty token-id arrays';
const STRING_ITEM_RULE = 'must be a non-empty string (every item of a text array)';
const TOKEN_ITEM_RULE = 'must be a token id: an integer of 0 or more';
const TOKEN_ARRAY_RULE = 'must be a non-empty array of token ids (every item of an array of token arrays)';
const ITEM_RULE = 'must be a non-empty string, a token id, or a non-empty array of token ids';

/**
 * Inputs of one request at most (OpenAI's limit): 100,000 made the gateway hold ~1 GB of answer and
 * 300,000 one past the 128 MiB answer cap, a 500 for what the client asked (found from outside). A flat
 * token-id array is one input, however long.
 */
const MAX_INPUTS = 2048;

const isTokenId = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Where `input` first breaks the rule (a path below `input`) and which rule it breaks; null when it holds. */
function inputProblem(input: unknown): { path: (string | number)[]; rule: string } | null {
  if (typeof input === 'string') return input.length > 0 ? null : { path: [], rule: INPUT_RULE };
  if (!Array.isArray(input) || input.length === 0) return { path: [], rule: INPUT_RULE };
  // The first item decides which of the three array shapes the client meant; later items must agree.
  const first: unknown = input[0];
  if (typeof first !== 'number' && input.length > MAX_INPUTS) return { path: [], rule: `must hold at most ${MAX_INPUTS} inputs` };
  for (const [i, item] of input.entries()) {
    if (typeof first === 'string') {
      if (typeof item !== 'string' || item.length === 0) return { path: [i], rule: STRING_ITEM_RULE };
    } else if (typeof first === 'number') {
      if (!isTokenId(item)) return { path: [i], rule: TOKEN_ITEM_RULE };
    } else if (Array.isArray(first)) {
      if (!Array.isArray(item) || item.length === 0) return { path: [i], rule: TOKEN_ARRAY_RULE };
      const bad = item.findIndex((t) => !isTokenId(t));
      if (bad >= 0) return { path: [i, bad], rule: TOKEN_ITEM_RULE };
    } else {
      return { path: [i], rule: ITEM_RULE };
    }
  }
  return null;
}

const inputField = z
  .unknown()
  .superRefine((input, ctx) => {
    const problem = inputProblem(input);
    if (problem) addIssue(ctx, { path: problem.path, message: problem.rule });
  })
  // Checked just above.
  .transform((input) => input as EmbeddingInput);

const embeddingsSchema = z.looseObject(
  {
    input: inputField,
    model: nonEmptyString(),
    encoding_format: absentIfNull(oneOf(['float', 'base64'])),
    dimensions: absentIfNull(positiveInteger()),
    user: absentIfNull(string()),
  },
  needs('must be a JSON object'),
);

export type EmbeddingsRequest = z.infer<typeof embeddingsSchema>;

export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  const result = safeParseCut(embeddingsSchema, body);
  if (!result.success) throw issueToGatewayError(result.error.issues, body);
  return result.data;
}
