/**
 * Wire schemas of the management API for keys and budgets. Bodies are strict: a field that is not listed
 * is a 400 naming it (a misspelt `scope` must not silently mint an inference key).
 */
import { z } from 'zod';
import { isoTimestamp, SCOPES, type Scope } from '../config.js';
import type { KeyRequest } from '../core/auth/key-request.js';
import type { BudgetCaps } from '../core/limits/budget-caps.js';
import { absentIfNull, integer, string } from './fields.js';
import { needs, parseStrictBody } from './issues.js';

const MAX_NAME = 256;
const MAX_IP_ENTRIES = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const WORKSPACE_ID = /^ws_[0-9a-f]+$/;

const SCOPES_RULE = `must be a non-empty array of scopes (${SCOPES.join(', ')})`;
/** An element's own rule: `scopes[0]` is one scope, not the array. */
const SCOPE_RULE = `must be one of the scopes ${SCOPES.join(', ')}`;
const ipList = (field: string) => {
  const rule = needs(`must be an array of at most ${MAX_IP_ENTRIES} IPv4/IPv6 addresses or CIDR ranges`);
  return z.array(string(`must be an IPv4/IPv6 address or CIDR range in ${field}`), rule).max(MAX_IP_ENTRIES, rule);
};

const EXPIRES_RULE = 'must be an ISO 8601 timestamp with a zone (e.g. 2027-01-31T00:00:00Z) or Unix seconds';
/** Read as Unix milliseconds. Responses render times as Unix seconds, which are accepted back as is. */
const expiresField = z.union([z.string(), z.number()], needs(EXPIRES_RULE)).transform((v, ctx): number => {
  const ms = typeof v === 'number' ? (Number.isSafeInteger(v) && v > 0 ? v * 1000 : Number.NaN) : isoTimestamp.safeParse(v).success ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: 'custom', message: EXPIRES_RULE });
    return z.NEVER;
  }
  return ms;
});

/** One field for create and rotate, so that both answer a bad scope list with the same code, param and message. */
const scopesField = absentIfNull(z.array(z.enum(SCOPES, needs(SCOPE_RULE)), needs(SCOPES_RULE)).min(1, needs(SCOPES_RULE)));

const createKeySchema = z.strictObject(
  {
    name: absentIfNull(z.string(needs(`must be a string of at most ${MAX_NAME} characters`)).max(MAX_NAME, needs(`must be a string of at most ${MAX_NAME} characters`))),
    scopes: scopesField,
    allowed_ips: absentIfNull(ipList('allowed_ips')),
    blocked_ips: absentIfNull(ipList('blocked_ips')),
    expires_at: absentIfNull(expiresField),
    quota_requests: absentIfNull(integer('must be an integer of 0 or more (0: no per-key quota)', { min: 0, max: 1e12 })),
    quota_window: absentIfNull(integer('must be a positive integer number of seconds', { min: 1, max: 31_536_000 })),
    endpoint_id: absentIfNull(z.string(needs('must be an endpoint id (UUID)')).regex(UUID, needs('must be an endpoint id (UUID)'))),
    // Emptiness is SPEC Authentication 10's rule, checked with the others in core/auth/key-request.ts.
    allowed_workspace_ids: z
      .array(z.string(needs('must be a workspace id (ws_<hex>)')).regex(WORKSPACE_ID, needs('must be a workspace id (ws_<hex>)')), needs('must be an array of workspace ids'))
      .optional(),
  },
  needs('must be a JSON object'),
);

const KEY_FIELDS = Object.keys(createKeySchema.shape);

const rotateKeySchema = z.strictObject({ scopes: scopesField }, needs('must be a JSON object'));
const ROTATE_FIELDS = Object.keys(rotateKeySchema.shape);

const capField = absentIfNull(integer('must be a positive integer number of tokens, or null for no cap', { min: 1 }));
const centsField = absentIfNull(integer('must be a positive integer number of US cents, or null for no cap', { min: 1 }));
const budgetSchema = z.strictObject(
  { hourly_tokens: capField, daily_tokens: capField, hard_cap_tokens: capField, hourly_cents: centsField, daily_cents: centsField, hard_cap_cents: centsField },
  needs('must be a JSON object'),
);
const BUDGET_FIELDS = Object.keys(budgetSchema.shape);


/** POST .../api-keys: SPEC's key table, with its defaults (scopes [inference], quota 0 per 60 s). */
export function parseCreateKey(body: unknown): KeyRequest {
  const b = parseStrictBody(createKeySchema, body, KEY_FIELDS);
  return {
    name: b.name ?? null,
    scopes: b.scopes ?? ['inference'],
    allowedIps: b.allowed_ips ?? [],
    blockedIps: b.blocked_ips ?? [],
    expiresAt: b.expires_at ?? null,
    quotaRequests: b.quota_requests ?? 0,
    quotaWindow: b.quota_window ?? 60,
    endpointId: b.endpoint_id ?? null,
    allowedWorkspaceIds: b.allowed_workspace_ids ?? null,
  };
}

/**
 * POST .../api-keys/{id}/rotate (SPEC Authentication 3: scopes change only by rotating with a new list).
 * `null`: no body, or no scopes in it; the key keeps its scopes.
 */
export function parseRotateKey(body: unknown): readonly Scope[] | null {
  const b = parseStrictBody(rotateKeySchema, body, ROTATE_FIELDS);
  return b.scopes ? [...new Set(b.scopes)] : null;
}

/** PUT .../budgets/...: the whole budget; an omitted or null cap is no cap in that window. */
export function parseBudget(body: unknown): BudgetCaps {
  const b = parseStrictBody(budgetSchema, body, BUDGET_FIELDS);
  return {
    hourlyTokens: b.hourly_tokens ?? null,
    dailyTokens: b.daily_tokens ?? null,
    hardCapTokens: b.hard_cap_tokens ?? null,
    hourlyCents: b.hourly_cents ?? null,
    dailyCents: b.daily_cents ?? null,
    hardCapCents: b.hard_cap_cents ?? null,
  };
}
