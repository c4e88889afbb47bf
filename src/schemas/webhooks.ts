/**
 * Wire schemas of the webhook routes (SPEC "Webhooks", "Webhook endpoint", Limits). Bodies are strict:
 * a field SPEC does not list (a misspelt `event`, a `secret`) is a 400 naming it, not silently ignored.
 * Whether a URL may be reached (https only, no private addresses) is the outbound guard's call, made
 * after parsing; here a URL only has to be one.
 */
import { z } from 'zod';
import { EVENT_TYPES, isEventType } from '../core/webhooks/event-types.js';
import { GatewayError } from '../errors.js';
import { absentIfNull, boolean, metadataField } from './fields.js';
import { describe } from '../core/describe-value.js';
import { addIssue, needs, parseStrictBody } from './issues.js';

export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 512;

const URL_RULE = `must be an absolute URL of at most ${MAX_URL_LENGTH} characters, e.g. https://example.com/hooks`;
const urlField = z
  .string(needs(URL_RULE))
  .max(MAX_URL_LENGTH, needs(URL_RULE))
  .refine((u) => URL.canParse(u), needs(URL_RULE));

/** The client reads the allowed types in the message itself, not in a document it may not have. */
const EVENT_TYPE_RULE = `must be one of the event types: ${Object.keys(EVENT_TYPES).join(', ')}`;
const EVENTS_RULE = 'must be a non-empty array of event types, e.g. ["exec.completed"]';
const eventsField = z
  .array(
    z.string(needs('must be an event type string')).refine(isEventType, needs(EVENT_TYPE_RULE)),
    needs(EVENTS_RULE),
  )
  .min(1, needs(EVENTS_RULE))
  .superRefine((events, ctx) => {
    const seen = new Set<string>();
    events.forEach((e, i) => {
      if (seen.has(e)) addIssue(ctx, { path: [i], message: 'must not repeat an event type' });
      seen.add(e);
    });
  });

const DESCRIPTION_RULE = `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters, or null`;
const descriptionField = z.string(needs(DESCRIPTION_RULE)).max(MAX_DESCRIPTION_LENGTH, needs(DESCRIPTION_RULE)).nullable();


const createSchema = z.strictObject(
  {
    url: urlField,
    events: eventsField,
    description: descriptionField.optional(),
    metadata: absentIfNull(metadataField()),
  },
  needs('must be a JSON object with url and events'),
);

/** PUT: every field optional; null means "not provided", except `description`, where it clears. */
const updateSchema = z.strictObject(
  {
    url: absentIfNull(urlField),
    events: absentIfNull(eventsField),
    description: descriptionField.optional(),
    is_active: absentIfNull(boolean()),
    metadata: absentIfNull(metadataField()),
  },
  needs('must be a JSON object'),
);

export type CreateWebhookBody = z.infer<typeof createSchema>;
export type UpdateWebhookBody = z.infer<typeof updateSchema>;

const OPAQUE = new Set(['metadata']);


export function parseCreateWebhook(body: unknown): CreateWebhookBody {
  return parseStrictBody(createSchema, body, ['url', 'events', 'description', 'metadata'], { mapping: { opaque: OPAQUE } });
}

export function parseUpdateWebhook(body: unknown): UpdateWebhookBody {
  return parseStrictBody(updateSchema, body, ['url', 'events', 'description', 'is_active', 'metadata'], { mapping: { opaque: OPAQUE } });
}

const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

/** `limit` (1 to 100, default 20) and `after` (the id of the last item of the previous page). */
export function parsePageQuery(query: URLSearchParams): { limit: number; after: string | null } {
  const rawLimit = query.get('limit');
  let limit = DEFAULT_PAGE;
  if (rawLimit !== null) {
    limit = /^\d+$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be an integer from 1 to ${MAX_PAGE}; got ${describe(rawLimit)}.` });
    }
  }
  const after = query.get('after');
  if (after === '') throw new GatewayError('invalid_query', { param: 'after', message: 'after must be the id of the last item of the previous page.' });
  return { limit, after };
}
