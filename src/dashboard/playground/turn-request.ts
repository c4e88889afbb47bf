/**
 * What the playground page sends for one turn (`POST .../playground/turn`, JSON), and the chat request it
 * becomes: the body and headers an API client would have sent to the direct or the routed chat route.
 * Pure: the route (playground-turn.ts) runs the result through the API's own use cases.
 *
 * The harness switches map one-to-one onto SPEC's request headers ("Chat completions and routing"), so a
 * switch left out of the request falls back exactly as a header left out would: the per-feature header,
 * else X-Service-Augment, else the surface default, which on this surface is on (SPEC Passthrough 2).
 */
import { z } from 'zod';
import { AUGMENT_HEADER, FEATURE_HEADERS, type HarnessFeature } from '../../core/chat/header-flags.js';
import { issueToGatewayError, needs } from '../../schemas/issues.js';
import { safeParseCut } from '../../schemas/long-arrays.js';

/** The conversation is kept in the page; a long one is still one request's worth, not a transcript store. */
export const MAX_PLAYGROUND_MESSAGES = 200;
const MAX_CONTENT_CHARS = 100_000;

export const HARNESS_FEATURES = Object.keys(FEATURE_HEADERS) as HarnessFeature[];

const message = z.object(
  {
    role: z.enum(['system', 'user', 'assistant'], needs('must be system, user or assistant')),
    content: z.string(needs('must be a string')).max(MAX_CONTENT_CHARS, needs(`must be at most ${MAX_CONTENT_CHARS} characters`)),
  },
  needs('must be an object with role and content'),
);

const featureSwitches = z.partialRecord(z.enum(HARNESS_FEATURES as [HarnessFeature, ...HarnessFeature[]], needs('must name a harness feature')), z.boolean(needs('must be true or false')));

const turnSchema = z.object(
  {
    target: z.discriminatedUnion(
      'kind',
      [
        z.object({ kind: z.literal('endpoint'), endpoint: z.string(needs('must be an endpoint slug')).min(1, needs('must be an endpoint slug')) }),
        z.object({ kind: z.literal('router') }),
      ],
      needs('must be {kind: "endpoint", endpoint} or {kind: "router"}'),
    ),
    /** null or absent: the workspace the API would pick (the project's default when the user reads it). */
    workspace: z.string(needs('must be a workspace id')).nullish(),
    messages: z.array(message, needs('must be an array of messages')).min(1, needs('must hold at least one message')).max(MAX_PLAYGROUND_MESSAGES, needs(`must hold at most ${MAX_PLAYGROUND_MESSAGES} messages`)),
    /** The router's affinity key (X-Conversation-Id): one per conversation in the page. */
    conversation_id: z.string(needs('must be a string')).max(200, needs('must be at most 200 characters')).optional(),
    max_tokens: z.number(needs('must be a number')).int(needs('must be a whole number')).positive(needs('must be positive')).optional(),
    harness: z
      .object({
        /** X-Service-Augment; absent: the surface default (on). */
        augment: z.boolean(needs('must be true or false')).optional(),
        features: featureSwitches.optional(),
      })
      .optional(),
  },
  needs('must be a JSON object'),
);

export type PlaygroundTurn = z.infer<typeof turnSchema>;

export function parsePlaygroundTurn(body: unknown): PlaygroundTurn {
  const result = safeParseCut(turnSchema, body);
  if (!result.success) throw issueToGatewayError(result.error.issues, body);
  return result.data;
}

const onOff = (on: boolean): string => (on ? 'on' : 'off');

/** The chat request an API client would send: always streamed, with the usage chunk the page shows. */
export function chatBodyOf(turn: PlaygroundTurn, model: string): Record<string, unknown> {
  return {
    model,
    messages: turn.messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(turn.max_tokens !== undefined ? { max_tokens: turn.max_tokens } : {}),
  };
}

/** The request headers of the turn: the workspace, the affinity key and the harness switches the page set. */
export function chatHeadersOf(turn: PlaygroundTurn): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (turn.workspace) headers['x-workspace-id'] = turn.workspace;
  if (turn.conversation_id) headers['x-conversation-id'] = turn.conversation_id;
  const harness = turn.harness;
  if (harness?.augment !== undefined) headers[AUGMENT_HEADER] = onOff(harness.augment);
  for (const feature of HARNESS_FEATURES) {
    const on = harness?.features?.[feature];
    if (on !== undefined) headers[FEATURE_HEADERS[feature]] = onOff(on);
  }
  return headers;
}
