/**
 * Tool declarations, tool_choice and response_format of a chat completion request (SPEC "Chat
 * completion request (body)"). JSON schemas inside them are forwarded as sent, never inspected.
 */
import { z } from 'zod';
import { absentIfNull, boolean, jsonObject, string } from './fields.js';
import { needs } from './issues.js';

/** The function-name rule of the chat-completions convention, also used for json_schema names. */
export const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const NAME_RULE = 'must be 1 to 64 letters, digits, underscores or dashes';
const functionName = z.string(needs(NAME_RULE)).regex(FUNCTION_NAME, needs(NAME_RULE));

const functionLiteral = z.literal('function', needs('must be function'));

const toolSchema = z.looseObject(
  {
    type: functionLiteral,
    function: z.looseObject(
      {
        name: functionName,
        description: absentIfNull(string()),
        parameters: absentIfNull(jsonObject('must be a JSON schema object')),
        strict: absentIfNull(boolean()),
      },
      needs('must be an object with a name'),
    ),
  },
  needs('must be an object with type function and a function'),
);

export const toolsSchema = z.array(toolSchema, needs('must be an array of function tools'));
export type ToolDeclaration = z.infer<typeof toolSchema>;

const TOOL_CHOICE_RULE = 'must be auto, none, required, or {"type": "function", "function": {"name": ...}}';
export const toolChoiceSchema = z.union(
  [
    z.enum(['auto', 'none', 'required'], needs(TOOL_CHOICE_RULE)),
    z.looseObject(
      { type: functionLiteral, function: z.looseObject({ name: functionName }, needs('must be an object with a name')) },
      needs(TOOL_CHOICE_RULE),
    ),
  ],
  needs(TOOL_CHOICE_RULE),
);

const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;
export const responseFormatSchema = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('text') }),
    z.looseObject({ type: z.literal('json_object') }),
    z.looseObject({
      type: z.literal('json_schema'),
      json_schema: z.looseObject(
        {
          name: functionName,
          description: absentIfNull(string()),
          schema: absentIfNull(jsonObject('must be a JSON schema object')),
          strict: absentIfNull(boolean()),
        },
        needs('must be an object with a name (required when type is json_schema)'),
      ),
    }),
  ],
  needs(`must be an object whose type is one of ${RESPONSE_FORMAT_TYPES.join(', ')}`),
);
