/**
 * The Responses API request body (the shape the official `openai` SDK sends to `POST /v1/responses`) and
 * the Conversations API bodies. Top-level fields are checked here; input items are checked where they are
 * translated (core/responses/input-items.ts), which names the offending item in `param`.
 */
import { z } from 'zod';
import { parseStrictBody } from './issues.js';

const itemList = z.array(z.record(z.string(), z.unknown()), { error: 'must be an array of item objects' });
const metadata = z.record(z.string(), z.string(), { error: 'must be an object of string values' }).nullable().optional();

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
};

const responseRequestSchema = z.strictObject(responseFields);
export type ResponseRequest = z.infer<typeof responseRequestSchema>;

export function parseResponseRequest(body: unknown): ResponseRequest {
  return parseStrictBody(responseRequestSchema, body, Object.keys(responseFields));
}

const conversationCreateFields = { items: itemList.nullable().optional(), metadata };
const conversationCreateSchema = z.strictObject(conversationCreateFields);
export type ConversationCreate = z.infer<typeof conversationCreateSchema>;

export function parseConversationCreate(body: unknown): ConversationCreate {
  return parseStrictBody(conversationCreateSchema, body, Object.keys(conversationCreateFields));
}

const conversationUpdateFields = { metadata: z.record(z.string(), z.string(), { error: 'must be an object of string values' }) };
const conversationUpdateSchema = z.strictObject(conversationUpdateFields);

export function parseConversationUpdate(body: unknown): { metadata: Record<string, string> } {
  return parseStrictBody(conversationUpdateSchema, body, Object.keys(conversationUpdateFields));
}

const itemsCreateFields = { items: itemList };
const itemsCreateSchema = z.strictObject(itemsCreateFields);

export function parseItemsCreate(body: unknown): { items: Record<string, unknown>[] } {
  return parseStrictBody(itemsCreateSchema, body, Object.keys(itemsCreateFields));
}
