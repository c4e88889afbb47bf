/**
 * The message object of a chat completion request (SPEC "Message object"). Objects are loose: fields we
 * do not know are forwarded untouched, since the gateway sends the client's bytes, not this parse.
 */
import { z } from 'zod';
import { compiledAcceptors, looseObjectAcceptor, type Acceptor } from './by-field.js';
import { absentIfNull, nonEmptyString, oneOf, string } from './fields.js';
import { addIssue, needs } from './issues.js';

export const MESSAGE_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

const ROLE_RULE = `must be one of ${MESSAGE_ROLES.join(', ')}`;

/** SPEC "Errors": role `function` is legacy function calling, refused as unsupported_value, not as a typo. */
const roleSchema = z
  .string(needs(ROLE_RULE))
  .superRefine((role, ctx) => {
    if (role === 'function') {
      addIssue(ctx, {
        code: 'unsupported_value',
        message: `${ROLE_RULE}: legacy function calling is not supported; answer a tool call with role tool and its tool_call_id`,
      });
    }
  })
  .pipe(z.enum(MESSAGE_ROLES, needs(ROLE_RULE)));

/** http(s) URLs are fetched and inlined server-side, data: URLs are used as sent (SPEC "Message object"). */
const MEDIA_URL_RULE = 'must be an http, https or data: URL';
const mediaUrl = z
  .string(needs(MEDIA_URL_RULE))
  .refine((url) => /^(https?:\/\/[^\s]+|data:[^\s]*)$/i.test(url) && URL.canParse(url), needs(MEDIA_URL_RULE));

const textPart = z.looseObject({ type: z.literal('text'), text: string() });

const imageUrlPart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: mediaUrl, detail: absentIfNull(oneOf(['auto', 'low', 'high'])) }, needs('must be an object with a url')),
});

/** Formats beyond wav and mp3 exist across engines; the transcriber, not the schema, decides. */
const inputAudioPart = z.looseObject({
  type: z.literal('input_audio'),
  input_audio: z.looseObject(
    { data: string('must be base64-encoded audio'), format: nonEmptyString('must name the audio format, e.g. wav or mp3') },
    needs('must be an object with data and format'),
  ),
});

const videoUrlPart = z.looseObject({
  type: z.literal('video_url'),
  video_url: z.looseObject({ url: mediaUrl }, needs('must be an object with a url')),
});

const refusalPart = z.looseObject({ type: z.literal('refusal'), refusal: string() });

const PART_TYPES = ['text', 'image_url', 'input_audio', 'video_url', 'refusal'] as const;
const contentPart = z.discriminatedUnion('type', [textPart, imageUrlPart, inputAudioPart, videoUrlPart, refusalPart], {
  error: `must be a content part object whose type is one of ${PART_TYPES.join(', ')}`,
});
export type ContentPart = z.infer<typeof contentPart>;

const CONTENT_RULE = 'must be a string or a non-empty array of content parts';
const content = z.union([z.string(), z.array(contentPart).min(1, needs(CONTENT_RULE))], needs(CONTENT_RULE));

const toolCall = z.looseObject(
  {
    id: nonEmptyString(),
    type: z.literal('function', needs('must be function')),
    function: z.looseObject(
      { name: nonEmptyString(), arguments: string('must be a string holding the JSON-encoded arguments') },
      needs('must be an object with name and arguments'),
    ),
  },
  needs('must be an object with id, type and function'),
);

const messageFields = {
  role: roleSchema,
  content: absentIfNull(content),
  name: absentIfNull(string()),
  tool_call_id: absentIfNull(nonEmptyString()),
  tool_calls: absentIfNull(z.array(toolCall, needs('must be an array of tool calls'))),
  refusal: absentIfNull(string()),
  function_call: z.unknown().optional(),
};

const messageFieldsSchema = z.looseObject(messageFields, needs('must be a message object with a role'));

type MessageIssue = Parameters<typeof addIssue>[1];

/** Rules between a message's fields, over a message whose every field already has its own shape right. */
function messageIssues(message: z.output<typeof messageFieldsSchema>): MessageIssue[] {
  const issues: MessageIssue[] = [];
  // Order: the legacy refusal first, since a legacy message usually also lacks content.
  if (message.role === 'assistant' && message.function_call != null) {
    issues.push({
      path: ['function_call'],
      code: 'unsupported_parameter',
      message: 'is not supported: legacy function calling is refused; send tool_calls instead',
      got: 'a function_call',
    });
  }
  if (message.role === 'tool' && message.tool_call_id === undefined) {
    issues.push({ path: ['tool_call_id'], message: 'is required on a tool message: the id of the tool call it answers' });
  }
  const answersWithoutContent = message.role === 'assistant' && ((message.tool_calls?.length ?? 0) > 0 || message.refusal !== undefined);
  if (message.content === undefined && !answersWithoutContent) {
    issues.push({
      path: ['content'],
      message: `${CONTENT_RULE}; it may be null only on an assistant message with tool_calls or a refusal`,
    });
  }
  if (message.role !== 'assistant' && Array.isArray(message.content)) {
    message.content.forEach((part, j) => {
      if (part.type === 'refusal') {
        issues.push({ path: ['content', j, 'type'], message: 'may be refusal only on an assistant message' });
      }
    });
  }
  return issues;
}

export const messageSchema = messageFieldsSchema.superRefine((message, ctx) => {
  for (const issue of messageIssues(message)) addIssue(ctx, issue);
});

/** The hot-path acceptor of one message (see by-field.ts): the schema decides whatever it does not accept. */
export const acceptMessage: Acceptor = looseObjectAcceptor(
  compiledAcceptors(messageFields),
  // Every known field present has passed its own schema: this is the shape messageFieldsSchema outputs.
  { required: ['role'], holds: (checked) => messageIssues(checked as z.output<typeof messageFieldsSchema>).length === 0 },
);

export type ChatMessage = z.infer<typeof messageSchema>;
