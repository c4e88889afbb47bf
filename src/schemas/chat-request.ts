/**
 * The chat completion request body (SPEC "Chat completion request (body)"). Parsing only checks the body
 * and gives typed reads of it: the gateway forwards the client's own bytes (SPEC "Passthrough and
 * augmentation rules" 1), so objects are loose and unknown fields survive untouched. Explicit null on an
 * optional field reads as absent. The first problem becomes a 400 whose `param` is the SPEC path.
 */
import { z } from 'zod';
import { REASONING_LEVELS } from '../config.js';
import { arrayAcceptor, compiledAcceptors, looseObjectAcceptor, NOT_ACCEPTED, type Acceptor } from './by-field.js';
import { acceptMessage, messageSchema } from './chat-message.js';
import { responseFormatSchema, toolChoiceSchema, toolsSchema } from './chat-tools.js';
import {
  absentIfNull,
  boolean,
  integer,
  jsonObject,
  metadataField,
  nonEmptyString,
  numberBetween,
  oneOf,
  positiveInteger,
  string,
} from './fields.js';
import { describe } from '../core/describe-value.js';
import { addIssue, issueToGatewayError, needs } from './issues.js';
import { safeParseCut } from './long-arrays.js';

export const REASONING_EFFORTS = ['none', ...REASONING_LEVELS] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** SPEC "Other limits". */
const MAX_STOP_SEQUENCES = 4;
const MAX_STOP_LENGTH = 256;
/** SPEC leaves n unbounded; 128 matches the chat-completions convention and the simulator. */
const MAX_N = 128;

const STOP_RULE = `must be a string or an array of at most ${MAX_STOP_SEQUENCES} strings, each at most ${MAX_STOP_LENGTH} characters`;
const stopSchema = z
  .union([z.string(), z.array(z.string(needs(STOP_RULE)))], needs(STOP_RULE))
  .superRefine((stop, ctx) => {
    const sequences = typeof stop === 'string' ? [stop] : stop;
    if (sequences.length > MAX_STOP_SEQUENCES) addIssue(ctx, { message: STOP_RULE, got: `${sequences.length} sequences` });
    const long = sequences.find((s) => s.length > MAX_STOP_LENGTH);
    if (long !== undefined) addIssue(ctx, { message: STOP_RULE, got: `a sequence of ${long.length} characters` });
  });

const LOGIT_BIAS_RULE = 'must map token ids (non-negative integer strings) to numbers between -100 and 100';
const logitBiasSchema = jsonObject(LOGIT_BIAS_RULE).superRefine((bias, ctx) => {
  // for..in, not Object.entries: an entry array per key was most of a 300,000-key bias's 1 s.
  for (const token in bias) {
    const value = bias[token];
    if (!/^\d+$/.test(token)) return addIssue(ctx, { message: LOGIT_BIAS_RULE, got: `the key ${describe(token)}` });
    if (typeof value !== 'number' || value < -100 || value > 100) return addIssue(ctx, { path: [token], message: LOGIT_BIAS_RULE });
  }
});

const MODALITIES_RULE = 'must be ["text"] or ["text", "audio"]';
const modalitiesSchema = z.array(z.string(needs(MODALITIES_RULE)), needs(MODALITIES_RULE)).superRefine((modalities, ctx) => {
  const set = [...modalities].sort().join(',');
  if (set !== 'text' && set !== 'audio,text') addIssue(ctx, { message: MODALITIES_RULE, got: JSON.stringify(modalities).slice(0, 80) });
});

const PREDICTION_CONTENT_RULE = 'must be a string or an array of text parts';
const predictionSchema = z.looseObject(
  {
    type: z.literal('content', needs('must be content')),
    content: z.union(
      [
        z.string(),
        z.array(z.looseObject({ type: z.literal('text', needs('must be text')), text: string() }, needs('must be a text part'))),
      ],
      needs(PREDICTION_CONTENT_RULE),
    ),
  },
  needs('must be an object with type content and a content'),
);

const reasoningSchema = z.looseObject(
  {
    effort: absentIfNull(oneOf(REASONING_EFFORTS)),
    enabled: absentIfNull(boolean()),
    max_tokens: absentIfNull(positiveInteger()),
    exclude: absentIfNull(boolean()),
  },
  needs('must be an object with effort, enabled, max_tokens or exclude'),
);

/** SPEC "Errors": legacy function calling is refused outright, never translated to tools. */
function legacyFunctionField(replacement: string) {
  return z
    .unknown()
    .optional()
    .superRefine((value, ctx) => {
      if (value != null) {
        addIssue(ctx, {
          code: 'unsupported_parameter',
          message: `is not supported: legacy function calling is refused; use ${replacement} instead`,
        });
      }
    })
    .transform((): undefined => undefined);
}

const penalty = () => numberBetween(-2, 2);

/** Every known top-level field and its schema; anything else passes through untouched. */
const chatRequestFields = {
  model: nonEmptyString(),
  messages: z.array(messageSchema, needs('must be a non-empty array of messages')).min(1, needs('must be a non-empty array of messages')),
  functions: legacyFunctionField('tools'),
  function_call: legacyFunctionField('tool_choice'),
  max_tokens: absentIfNull(positiveInteger()),
  max_completion_tokens: absentIfNull(positiveInteger()),
  temperature: absentIfNull(numberBetween(0, 2)),
  top_p: absentIfNull(numberBetween(0, 1)),
  stream: absentIfNull(boolean()),
  stream_options: absentIfNull(z.looseObject({ include_usage: absentIfNull(boolean()) }, needs('must be an object'))),
  stop: absentIfNull(stopSchema),
  frequency_penalty: absentIfNull(penalty()),
  presence_penalty: absentIfNull(penalty()),
  top_k: absentIfNull(integer('must be an integer of at least 0 (0 disables it)', { min: 0 })),
  min_p: absentIfNull(numberBetween(0, 1)),
  repetition_penalty: absentIfNull(
    z.number(needs('must be a number greater than 0 (1.0 is neutral)')).gt(0, needs('must be a number greater than 0 (1.0 is neutral)')),
  ),
  n: absentIfNull(integer(`must be an integer between 1 and ${MAX_N}`, { min: 1, max: MAX_N })),
  seed: absentIfNull(integer('must be an integer')),
  logprobs: absentIfNull(boolean()),
  top_logprobs: absentIfNull(integer('must be an integer between 0 and 20', { min: 0, max: 20 })),
  logit_bias: absentIfNull(logitBiasSchema),
  tools: absentIfNull(toolsSchema),
  tool_choice: absentIfNull(toolChoiceSchema),
  parallel_tool_calls: absentIfNull(boolean()),
  response_format: absentIfNull(responseFormatSchema),
  metadata: absentIfNull(metadataField()),
  user: absentIfNull(string()),
  store: absentIfNull(boolean()),
  // SPEC "service_tier": unrecognized values resolve to default and are never refused.
  service_tier: absentIfNull(string('must be a string, e.g. auto, default, flex, scale or priority')),
  reasoning_effort: absentIfNull(oneOf(REASONING_EFFORTS)),
  reasoning: absentIfNull(reasoningSchema),
  include_reasoning: absentIfNull(boolean()),
  prediction: absentIfNull(predictionSchema),
  modalities: absentIfNull(modalitiesSchema),
  audio: absentIfNull(
    z.looseObject({ voice: nonEmptyString(), format: nonEmptyString() }, needs('must be an object with voice and format')),
  ),
};

const fieldsSchema = z.looseObject(chatRequestFields, needs('must be a JSON object'));
type FieldsChecked = z.output<typeof fieldsSchema>;

type CrossFieldIssue = Parameters<typeof addIssue>[1];

/** Rules between fields, over a request whose every field already has its own shape right. */
function crossFieldIssues(req: FieldsChecked): CrossFieldIssue[] {
  const issues: CrossFieldIssue[] = [];
  if (req.top_logprobs !== undefined && req.logprobs !== true) {
    issues.push({ path: ['top_logprobs'], message: 'requires logprobs: true', got: `logprobs ${req.logprobs ?? 'absent'}` });
  }
  if (req.stream_options !== undefined && req.stream !== true) {
    issues.push({ path: ['stream_options'], message: 'is allowed only when stream is true', got: `stream ${req.stream ?? 'absent'}` });
  }
  if (req.n !== undefined && req.n > 1 && req.stream === true) {
    issues.push({ path: ['n'], message: 'must be 1 when stream is true: only n=1 is supported when streaming' });
  }
  const choice = req.tool_choice;
  if (typeof choice === 'object') {
    const declared = (req.tools ?? []).map((t) => t.function.name);
    if (!declared.includes(choice.function.name)) {
      const allowed = declared.length ? `one of ${declared.join(', ')}` : 'a declared tool, but no tools were sent';
      issues.push({ path: ['tool_choice'], message: `must name a function declared in tools: ${allowed}`, got: describe(choice.function.name) });
    }
  }
  return issues;
}

export const chatRequestSchema = fieldsSchema.superRefine((req, ctx) => {
  for (const issue of crossFieldIssues(req)) addIssue(ctx, issue);
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

/**
 * The whole-request parser: zod's generated fast path, falling back to the runtime parser (and its exact
 * issues) only when the fast path rejects. The runtime parser alone cost ~35 us per request in the server,
 * mostly as GC work. `strict`: a schema change the compiler cannot model fails at import, in every test
 * run, rather than silently going slow.
 */
const compiledChatRequestSchema = z.compile(chatRequestSchema, { strict: true });

/**
 * The hot path (see by-field.ts): each field a body carries is checked by its own compiled schema, and each
 * message by the message's acceptor, so a request pays for what it sends rather than for every field the
 * gateway knows. The whole-object compiled parser cost ~9 us per request in the server (docs/decisions.md
 * "Hot-path choices"). Whatever it does not accept goes to the whole schema, which decides.
 */
const { messages: _wholeMessages, ...fieldsBesideMessages } = chatRequestFields;
export const acceptChatRequest: Acceptor = looseObjectAcceptor(
  { ...compiledAcceptors(fieldsBesideMessages), messages: arrayAcceptor(acceptMessage, 1) },
  // Every known field present has passed its own schema: this is the shape fieldsSchema outputs.
  { required: ['model', 'messages'], holds: (checked) => crossFieldIssues(checked as FieldsChecked).length === 0 },
);

/** SPEC names the field itself as `param` for these, not the element or key at fault. */
const OPAQUE_PARAMS: ReadonlySet<string> = new Set(['stop', 'metadata', 'logit_bias', 'modalities']);

/** Throws GatewayError (400) for the first problem; returns the typed, still-loose request. */
export function parseChatRequest(body: unknown): ChatRequest {
  const accepted = acceptChatRequest(body);
  // The acceptor returns what the schema outputs, which is this type.
  if (accepted !== NOT_ACCEPTED) return accepted as ChatRequest;
  // Long arrays are diagnosed by their first bad element (long-arrays.ts); the acceptor left every long
  // array but `messages` to this parse, and stops at the first bad message itself.
  const result = safeParseCut(chatRequestSchema, body, compiledChatRequestSchema);
  if (!result.success) throw issueToGatewayError(result.error.issues, body, { opaque: OPAQUE_PARAMS });
  return result.data;
}
