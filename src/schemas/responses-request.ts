/**
 * The Responses API request body (the shape the official `openai` SDK sends to `POST /v1/responses`) and
 * the Conversations API bodies. Top-level fields are checked here; input items are checked where they are
 * translated (core/responses/input-items.ts), which names the offending item in `param`.
 */
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { metadataField } from './fields.js';
import { parseStrictBody } from './issues.js';

const itemList = z.array(z.record(z.string(), z.unknown()), { error: 'must be an array of item objects' });
// SPEC "Other limits" (16 pairs, keys 64, values 512), as on chat requests; `metadata` is the param, never a key of it.
const metadata = metadataField().nullable().optional();
const OPAQUE = { mapping: { opaque: new Set(['metadata']) } };

const responseFields = {
  model: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
  input: z.union([z.string(), itemList], { error: 'must be a string or an array of input items' }).optional(),
  instructions: z.string({ error: 'must be a string' }).nullable().optional(),
  tools: z.array(z.record(z.string(), z.unknown()), { error: 'must be an array of tools' }).optional(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.record(z.string(), z.unknown())], { error: 'must be auto, none, required or a function choice' }).optional(),
  parallel_tool_calls: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
  max_output_tokens: z.number({ error: 'must be a positive integer' }).int({ error: 'must be a positive integer' }).positive({ error: 'must be a positive integer' }).nullable().optional(),
  temperature: z.number({ error: 'must be a number between 0 and 2' }).min(0, { error: 'must be a number between 0 and 2' }).max(2, { error: 'must be a number between 0 and 2' }).nullable().optional(),
  top_p: z.number({ error: 'must be a number between 0 and 1' }).min(0, { error: 'must be a number between 0 and 1' }).max(1, { error: 'must be a number between 0 and 1' }).nullable().optional(),
  reasoning: z.object({ effort: z.string({ error: 'must be a string' }).nullable().optional(), summary: z.string().nullable().optional() }, { error: 'must be an object' }).nullable().optional(),
  text: z.object({ format: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(), verbosity: z.string().nullable().optional() }, { error: 'must be an object' }).nullable().optional(),
  previous_response_id: z.string({ error: 'must be a string' }).nullable().optional(),
  conversation: z.union([z.string(), z.object({ id: z.string() })], { error: 'must be a conversation id or {id}' }).nullable().optional(),
  store: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
  stream: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
  metadata,
  truncation: z.enum(['auto', 'disabled'], { error: 'must be auto or disabled' }).nullable().optional(),
  background: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
  user: z.string({ error: 'must be a string' }).optional(),
  // Accepted for OpenAI's clients (docs/decisions.md "Responses fields the gateway honours"): each is
  // applied by the translation, passed on to the model server, or only steers OpenAI's own hosting.
  include: z.array(z.string({ error: 'must be an array of strings' }), { error: 'must be an array of strings' }).nullable().optional(),
  prompt_cache_key: z.string({ error: 'must be a string' }).nullable().optional(),
  prompt_cache_retention: z.string({ error: 'must be a string' }).nullable().optional(),
  safety_identifier: z.string({ error: 'must be a string' }).nullable().optional(),
  client_metadata: z.record(z.string(), z.unknown(), { error: 'must be an object' }).nullable().optional(),
  service_tier: z.string({ error: 'must be a string, e.g. auto, default, flex or priority' }).nullable().optional(),
  top_logprobs: z.number({ error: 'must be an integer between 0 and 20' }).int({ error: 'must be an integer between 0 and 20' }).min(0, { error: 'must be an integer between 0 and 20' }).max(20, { error: 'must be an integer between 0 and 20' }).nullable().optional(),
  max_tool_calls: z.number({ error: 'must be a positive integer' }).int({ error: 'must be a positive integer' }).positive({ error: 'must be a positive integer' }).nullable().optional(),
  stream_options: z.object({ include_obfuscation: z.boolean({ error: 'must be a boolean' }).nullable().optional() }, { error: 'must be an object' }).nullable().optional(),
};

/**
 * OpenAI fields that only OpenAI's hosting can serve: refused by name with the reason, rather than as an
 * unknown field, so a client learns that the gateway knows the field and why it cannot honour it.
 */
const HOSTED_ONLY: Readonly<Record<string, string>> = {
  prompt: 'prompt names a prompt template stored in OpenAI\'s dashboard, which the gateway cannot read; send its text as instructions and input instead.',
  context_management: "context_management asks OpenAI's servers to compact the context, which the gateway's model servers do not do; send truncation: \"auto\" or a shorter input instead.",
  moderation: "moderation asks for OpenAI's hosted moderation of the turn, which the gateway does not run.",
};

/** Accepted `include` values (docs/decisions.md "Responses fields the gateway honours"). */
export const RESPONSE_INCLUDABLES: ReadonlySet<string> = new Set([
  'message.output_text.logprobs',
  'message.input_image.image_url',
  'reasoning.encrypted_content',
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'code_interpreter_call.outputs',
  'computer_call_output.output.image_url',
]);

function checkHostedOnly(body: unknown): void {
  if (!body || typeof body !== 'object') return;
  for (const [field, reason] of Object.entries(HOSTED_ONLY)) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) throw new GatewayError('unsupported_parameter', { param: field, message: reason });
  }
}

function checkInclude(include: readonly string[] | null | undefined): void {
  include?.forEach((value, i) => {
    if (!RESPONSE_INCLUDABLES.has(value)) {
      throw new GatewayError('unsupported_value', { param: `include[${i}]`, message: `include[${i}] ${JSON.stringify(value)} is not supported; the values are ${[...RESPONSE_INCLUDABLES].join(', ')}.` });
    }
  });
}

const responseRequestSchema = z.strictObject(responseFields);
export type ResponseRequest = z.infer<typeof responseRequestSchema>;

export function parseResponseRequest(body: unknown): ResponseRequest {
  checkHostedOnly(body);
  const request = parseStrictBody(responseRequestSchema, body, Object.keys(responseFields), OPAQUE);
  checkInclude(request.include);
  return request;
}

const conversationCreateFields = { items: itemList.nullable().optional(), metadata };
const conversationCreateSchema = z.strictObject(conversationCreateFields);
export type ConversationCreate = z.infer<typeof conversationCreateSchema>;

export function parseConversationCreate(body: unknown): ConversationCreate {
  return parseStrictBody(conversationCreateSchema, body, Object.keys(conversationCreateFields), OPAQUE);
}

const conversationUpdateFields = { metadata: metadataField() };
const conversationUpdateSchema = z.strictObject(conversationUpdateFields);

export function parseConversationUpdate(body: unknown): { metadata: Record<string, string> } {
  return parseStrictBody(conversationUpdateSchema, body, Object.keys(conversationUpdateFields), OPAQUE);
}

const itemsCreateFields = { items: itemList };
const itemsCreateSchema = z.strictObject(itemsCreateFields);

export function parseItemsCreate(body: unknown): { items: Record<string, unknown>[] } {
  return parseStrictBody(itemsCreateSchema, body, Object.keys(itemsCreateFields));
}
