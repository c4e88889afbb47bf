/**
 * Wire rules of POST .../v1/rerank and .../v1/score (SPEC names them and shows no body): the shapes vLLM
 * serves and Jina / Cohere clients send. Loose objects: unknown fields are the model server's business and
 * are forwarded untouched, like every byte except `model`. Only what the gateway needs is checked: a model
 * name, and texts it can estimate the charge of when the server reports no usage.
 */
import { z } from 'zod';
import { absentIfNull, boolean, integer, nonEmptyString, string } from './fields.js';
import { issueToGatewayError, needs } from './issues.js';
import { safeParseCut } from './long-arrays.js';

const DOCUMENT_RULE = 'must be a string or an object with a string text';
const document = z.union([z.string(needs(DOCUMENT_RULE)), z.looseObject({ text: z.string(needs(DOCUMENT_RULE)) }, needs(DOCUMENT_RULE))], needs(DOCUMENT_RULE));

const rerankSchema = z.looseObject(
  {
    model: nonEmptyString(),
    query: string(),
    documents: z.array(document, needs('must be an array of strings or of {text} objects')).min(1, needs('must be an array of strings or of {text} objects')),
    top_n: absentIfNull(integer('must be an integer of 0 or more', { min: 0 })),
    return_documents: absentIfNull(boolean()),
  },
  needs('must be a JSON object'),
);

const TEXTS_RULE = 'must be a string or a non-empty array of strings';
const texts = z.union([z.string(needs(TEXTS_RULE)), z.array(z.string(needs(TEXTS_RULE)), needs(TEXTS_RULE)).min(1, needs(TEXTS_RULE))], needs(TEXTS_RULE));

const scoreSchema = z.looseObject({ model: nonEmptyString(), text_1: texts, text_2: texts }, needs('must be a JSON object'));

export type RerankRequest = z.infer<typeof rerankSchema>;
export type ScoreRequest = z.infer<typeof scoreSchema>;

export function parseRerankRequest(body: unknown): RerankRequest {
  const result = safeParseCut(rerankSchema, body);
  if (!result.success) throw issueToGatewayError(result.error.issues, body);
  return result.data;
}

export function parseScoreRequest(body: unknown): ScoreRequest {
  const result = safeParseCut(scoreSchema, body);
  if (!result.success) throw issueToGatewayError(result.error.issues, body);
  return result.data;
}

/** The texts a request sends, for the charge estimate when the server reports no usage. */
export function rerankTexts(r: RerankRequest): string[] {
  return [r.query, ...r.documents.map((d) => (typeof d === 'string' ? d : d.text))];
}

export function scoreTexts(r: ScoreRequest): string[] {
  return [r.text_1, r.text_2].flat();
}
