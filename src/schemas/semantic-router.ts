/**
 * Wire schemas of the semantic-router management routes (SPEC "Routing rule", "Semantic router
 * settings", "Semantic router management"). Every refusal is 400 `invalid_semantic_router_config` with
 * the SPEC path in `param`, except an unknown settings key: `unknown_semantic_router_setting`. Nothing is
 * clamped or coerced. Checks that need the catalog (endpoint targets) live in core/routing/rule-set.ts.
 */
import { z } from 'zod';
import type { RoutingRule } from '../core/routing/types.js';
import { GatewayError } from '../errors.js';
import { boolean, integer, numberBetween } from './fields.js';
import { issueToGatewayError, needs, parseStrictBody } from './issues.js';

export const MAX_QUERY_CONTAINS = 10;
export const MAX_QUERY_CONTAINS_CHARS = 200;
const MAX_NAME_CHARS = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const uuid = (what: string) => z.string(needs(`must be ${what} (a UUID)`)).regex(UUID, needs(`must be ${what} (a UUID)`));
const name = z.string(needs(`must be a string of at most ${MAX_NAME_CHARS} characters`)).max(MAX_NAME_CHARS, needs(`must be a string of at most ${MAX_NAME_CHARS} characters`));
const WORD_RULE = `must be a non-empty string of at most ${MAX_QUERY_CONTAINS_CHARS} characters`;
const LIST_RULE = `must be an array of at most ${MAX_QUERY_CONTAINS} strings`;
const queryContains = z
  .array(z.string(needs(WORD_RULE)).min(1, needs(WORD_RULE)).max(MAX_QUERY_CONTAINS_CHARS, needs(WORD_RULE)), needs(LIST_RULE))
  .max(MAX_QUERY_CONTAINS, needs(LIST_RULE));
const minInputTokens = integer('must be a positive integer (an estimated input-token count)', { min: 1, max: Number.MAX_SAFE_INTEGER });
const exactModel = z.string(needs('must be a non-empty string')).min(1, needs('must be a non-empty string'));
const priority = integer('must be an integer between -1000000 and 1000000', { min: -1_000_000, max: 1_000_000 });

/** POST .../rules: the flat request shape; `id` is minted by the server, never accepted. */
const ruleCreateSchema = z.strictObject({
  name: name.optional(),
  query_contains: queryContains.optional(),
  min_input_tokens: minInputTokens.optional(),
  exact_request_model: exactModel.optional(),
  endpoint_id: uuid('an endpoint id'),
  fallback_to_classification: boolean().optional(),
  priority: priority.optional(),
  enabled: boolean().optional(),
});

/** PATCH .../rules/{id}: omitted fields unchanged; min_input_tokens and exact_request_model cannot be cleared. */
const ruleUpdateSchema = z.strictObject({
  name: name.optional(),
  query_contains: queryContains.optional(),
  min_input_tokens: minInputTokens.optional(),
  exact_request_model: exactModel.optional(),
  endpoint_id: uuid('an endpoint id').optional(),
  fallback_to_classification: boolean().optional(),
  priority: priority.optional(),
  enabled: boolean().optional(),
});

const RULE_FIELDS = Object.keys(ruleCreateSchema.shape);

/** A flat rule body; every refusal (an unknown field named with the fields there are) in this family's code. */
function parseRuleFields<T>(schema: z.ZodType<T>, input: Record<string, unknown>): T {
  try {
    return parseStrictBody(schema, input, RULE_FIELDS);
  } catch (err) {
    throw err instanceof GatewayError ? configError(err) : err;
  }
}

export type RuleCreate = z.infer<typeof ruleCreateSchema>;
export type RuleUpdate = z.infer<typeof ruleUpdateSchema>;

/** The nested (response) shape, accepted inside the config PATCH's semantic_router_dynamic_rules. */
const nestedRuleSchema = z.strictObject({
  id: z.string(needs('must be the id of an existing rule, or omitted for a new one')).optional(),
  name: name.optional(),
  match: z
    .strictObject({
      query_contains: queryContains.optional(),
      min_input_tokens: minInputTokens.nullable().optional(),
      exact_request_model: exactModel.nullable().optional(),
    }, needs('must be an object'))
    .optional(),
  action: z.strictObject({ endpoint_id: uuid('an endpoint id'), fallback_to_classification: boolean().optional() }, needs('must be an object with endpoint_id')),
  priority: priority.optional(),
  enabled: boolean().optional(),
}, needs('must be a rule object'));
type NestedRule = z.infer<typeof nestedRuleSchema>;

const SETTINGS = {
  semantic_router_enabled: boolean().nullable(),
  semantic_router_multi_model_enabled: boolean().nullable(),
  semantic_router_similarity_floor: numberBetween(0, 1).nullable(),
  semantic_router_switch_margin: numberBetween(0, 1).nullable(),
  semantic_router_proximity_bonus: numberBetween(0, 1).nullable(),
  semantic_router_fallback_endpoint_id: uuid('an endpoint id').nullable(),
  // Ours (issue 16): the multimodel route's planner; null resets to the default (docs/decisions.md).
  semantic_router_planner_endpoint_id: uuid('an endpoint id').nullable(),
  semantic_router_excluded_endpoint_ids: z.array(uuid('an endpoint id'), needs('must be an array of endpoint ids')).max(1000, needs('must list at most 1000 endpoint ids')).nullable(),
  semantic_router_dynamic_rules: z.array(z.preprocess(nestFlatRule, nestedRuleSchema), needs('must be an array of rule objects')).nullable(),
} as const;

export type SettingKey = keyof typeof SETTINGS;
export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

/** A PATCH: each present key is a value, or null (reset to the deployment default). */
export type SettingsPatch = { -readonly [K in SettingKey]?: z.infer<(typeof SETTINGS)[K]> };
/** Rules as sent in a config PATCH: ids only where they name existing rules. */
export type RuleDraft = Omit<RoutingRule, 'id'> & { readonly id: string | undefined };

function configError(e: GatewayError, prefix = ''): GatewayError {
  if (!prefix) return new GatewayError('invalid_semantic_router_config', { param: e.param, message: e.message });
  const inner = e.param ?? '';
  const param = inner === '' ? prefix : inner.startsWith('[') ? `${prefix}${inner}` : `${prefix}.${inner}`;
  const message = inner === '' ? e.message.replace(/^The request body/, prefix) : e.message.replace(inner, param);
  return new GatewayError('invalid_semantic_router_config', { param, message });
}

function asObject(body: unknown, what: string): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_semantic_router_config', { message: `The request body must be a JSON object of ${what}.` });
  }
  return body as Record<string, unknown>;
}

export function parseSettingsPatch(body: unknown): SettingsPatch {
  const input = asObject(body, 'settings');
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (!Object.hasOwn(SETTINGS, key)) {
      throw new GatewayError('unknown_semantic_router_setting', {
        param: key,
        message: `${JSON.stringify(key)} is not a semantic router setting; known settings: ${SETTING_KEYS.join(', ')}.`,
      });
    }
    const result = SETTINGS[key as SettingKey].safeParse(value);
    if (!result.success) {
      const e = issueToGatewayError(result.error.issues, value);
      throw configError(e, key);
    }
    patch[key] = result.data;
  }
  return patch as SettingsPatch;
}

/** The flat request shape (POST) inside a rules array is accepted too, and read as the nested one. */
function nestFlatRule(value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value) || !('endpoint_id' in value) || 'action' in value) return value;
  const { query_contains, min_input_tokens, exact_request_model, endpoint_id, fallback_to_classification, ...rest } = value as Record<string, unknown>;
  const match = Object.fromEntries(Object.entries({ query_contains, min_input_tokens, exact_request_model }).filter(([, v]) => v !== undefined));
  const action = Object.fromEntries(Object.entries({ endpoint_id, fallback_to_classification }).filter(([, v]) => v !== undefined));
  return { ...rest, match, action };
}

export function draftFromNested(rule: NestedRule): RuleDraft {
  return {
    id: rule.id,
    name: rule.name ?? '',
    match: {
      query_contains: rule.match?.query_contains ?? [],
      min_input_tokens: rule.match?.min_input_tokens ?? null,
      exact_request_model: rule.match?.exact_request_model ?? null,
    },
    action: { endpoint_id: rule.action.endpoint_id, fallback_to_classification: rule.action.fallback_to_classification ?? true },
    priority: rule.priority ?? 0,
    enabled: rule.enabled ?? true,
  };
}

export function parseRuleCreate(body: unknown): RuleCreate {
  const input = asObject(body, 'rule fields');
  if ('id' in input) throw new GatewayError('invalid_semantic_router_config', { param: 'id', message: 'id is minted by the server and cannot be sent on create.' });
  return parseRuleFields(ruleCreateSchema, input);
}

export function parseRuleUpdate(body: unknown): RuleUpdate {
  const input = asObject(body, 'rule fields');
  for (const field of ['min_input_tokens', 'exact_request_model'] as const) {
    if (input[field] === null) {
      throw new GatewayError('invalid_semantic_router_config', {
        param: field,
        message: `${field} cannot be cleared on an existing rule; delete the rule and create it again without it.`,
      });
    }
  }
  return parseRuleFields(ruleUpdateSchema, input);
}

/** A created or updated rule in the stored shape (fields not sent take SPEC's defaults or stay). */
export function ruleFromFields(id: string, fields: RuleCreate | RuleUpdate, base?: RoutingRule): RoutingRule {
  return {
    id,
    name: fields.name ?? base?.name ?? '',
    match: {
      query_contains: fields.query_contains ?? base?.match.query_contains ?? [],
      min_input_tokens: fields.min_input_tokens ?? base?.match.min_input_tokens ?? null,
      exact_request_model: fields.exact_request_model ?? base?.match.exact_request_model ?? null,
    },
    action: {
      endpoint_id: fields.endpoint_id ?? base?.action.endpoint_id ?? '',
      fallback_to_classification: fields.fallback_to_classification ?? base?.action.fallback_to_classification ?? true,
    },
    priority: fields.priority ?? base?.priority ?? 0,
    enabled: fields.enabled ?? base?.enabled ?? true,
  };
}
