/**
 * Wire schemas of the invocations' routes (docs/exec.md "Invocations", "Approvals"). Every body problem is
 * 400 `invalid_body` (SPEC "Execution surface errors": the body failed JSON decoding or schema
 * validation), with the field as param. `workspace_id` is not checked here: docs/exec.md's validation
 * order gives it codes of its own (missing_workspace_id, invalid_workspace_id, workspace_not_found).
 */
import { z } from 'zod';
import { APPROVAL_STATES, type ApprovalState } from '../core/exec/approval-machine.js';
import { INVOCATION_STATUSES, type InvocationStatus } from '../core/exec/invocation-machine.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../json-body.js';
import { integer } from './fields.js';
import { describe } from '../core/describe-value.js';
import { needs, parseStrictBody } from './issues.js';

/** docs/exec.md "Concepts": tool names. */
export const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;
export const MAX_TIMEOUT_MS = 3_600_000;
export const MAX_REASON_LENGTH = 1000;
const IDEMPOTENCY_KEY_MAX = 255;

const createSchema = z.strictObject(
  {
    workspace_id: z.unknown().optional(),
    tool_name: z.string(needs('must be a tool name (letters, digits, _ . -; 1 to 64)')).regex(TOOL_NAME, needs('must be a tool name (letters, digits, _ . -; 1 to 64)')),
    arguments: z.record(z.string(), z.unknown(), needs('must be a JSON object')).optional(),
    timeout_ms: integer(`must be an integer from 1 to ${MAX_TIMEOUT_MS}`, { min: 1, max: MAX_TIMEOUT_MS }).optional(),
  },
  needs('must be a JSON object with workspace_id and tool_name'),
);

const rejectSchema = z.strictObject(
  { reason: z.string(needs(`must be a string of at most ${MAX_REASON_LENGTH} characters`)).max(MAX_REASON_LENGTH, needs(`must be a string of at most ${MAX_REASON_LENGTH} characters`)).optional() },
  needs('must be a JSON object'),
);

export type CreateInvocationBody = z.infer<typeof createSchema>;

/** The body as JSON: a body that is not JSON is `invalid_body` on this surface, not `invalid_json`. */
function jsonOf(buf: Buffer, emptyAs: unknown): unknown {
  if (buf.length === 0 && emptyAs !== undefined) return emptyAs;
  try {
    return parseJsonBody(buf);
  } catch (err) {
    throw new GatewayError('invalid_body', { message: err instanceof GatewayError ? err.message : 'The request body is not valid JSON.' });
  }
}


export function parseCreateInvocation(buf: Buffer): { body: CreateInvocationBody; raw: unknown } {
  const raw = jsonOf(buf, undefined);
  return { body: parseStrictBody(createSchema, raw, ['workspace_id', 'tool_name', 'arguments', 'timeout_ms'], { code: 'invalid_body' }), raw };
}

/** Accept takes no fields: an empty body or `{}`. */
export function parseAcceptApproval(buf: Buffer): void {
  parseStrictBody(z.strictObject({}, needs('must be a JSON object')), jsonOf(buf, {}), [], { code: 'invalid_body' });
}

export function parseRejectApproval(buf: Buffer): { reason: string | null } {
  const body = parseStrictBody(rejectSchema, jsonOf(buf, {}), ['reason'], { code: 'invalid_body' });
  return { reason: body.reason ?? null };
}

/** Cancel takes no fields either. */
export const parseCancelInvocation = parseAcceptApproval;

/** `Idempotency-Key`: 1 to 255 characters (docs/exec.md). */
export function parseIdempotencyKey(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.length === 0 || value.length > IDEMPOTENCY_KEY_MAX) {
    throw new GatewayError('invalid_request', { param: 'Idempotency-Key', message: `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} characters; got ${value.length}.` });
  }
  return value;
}

export function parseStatusFilter(value: string | null): InvocationStatus | null {
  if (value === null) return null;
  if ((INVOCATION_STATUSES as readonly string[]).includes(value)) return value as InvocationStatus;
  throw new GatewayError('invalid_query', { param: 'status', message: `status must be one of ${INVOCATION_STATUSES.join(', ')}; got ${describe(value)}.` });
}

export function parseStateFilter(value: string | null): ApprovalState | null {
  if (value === null) return null;
  if ((APPROVAL_STATES as readonly string[]).includes(value)) return value as ApprovalState;
  throw new GatewayError('invalid_query', { param: 'state', message: `state must be one of ${APPROVAL_STATES.join(', ')}; got ${describe(value)}.` });
}

/** The canonical form of a body for Idempotency-Key comparison: keys sorted at every level. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
