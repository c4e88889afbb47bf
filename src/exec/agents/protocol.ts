/**
 * The agent WebSocket protocol (docs/exec.md "Agent protocol"): JSON text frames `{type, ...}`. The
 * gateway's messages are built here; the agent's runtime messages (after `enroll`, see manifest.ts) are
 * parsed here. Unknown fields in runtime messages are ignored, so an agent may send more than this
 * gateway reads.
 */
import { z } from 'zod';
import { requirementOf } from '../../schemas/issues.js';
import { safeParseCut } from '../../schemas/long-arrays.js';

/** SPEC "Execution surface errors": enrollment protocol codes, sent in-band, never retryable. */
export type EnrollErrorCode = 'exec_manifest_invalid' | 'agent_name_in_use' | 'agent_name_conflict';
/** In-band codes beside SPEC's: a bad runtime message (dropped, the connection stays), a credential gone. */
export type ProtocolErrorCode = EnrollErrorCode | 'invalid_body' | 'key_revoked';

/** Close codes (4000-4999 are the application's, RFC 6455 7.4.2); 4xxx mirrors the HTTP status. */
export const CLOSE = {
  /** A protocol error (after an `error` message). */
  protocolError: 4400,
  /** The agent's key was rotated, or the credential was revoked while connecting. */
  keyRevoked: 4401,
  /** The agent was deleted. */
  deleted: 4403,
  /** No message for `lease_ms` (or no `enroll` within it). */
  leaseExpired: 4408,
} as const;

const outputSchema = z.object({ type: z.literal('invocation.output'), invocation_id: z.string().min(1).max(64), data: z.string() });
const resultSchema = z.object({
  type: z.literal('invocation.result'),
  invocation_id: z.string().min(1).max(64),
  exit_code: z.number().int(),
  output: z.string().nullable().optional(),
  error: z.string().nullable().optional(),
  /** The agent dropped output past a cap of its own: the gateway's copy is cut too, whatever its size. */
  output_truncated: z.boolean().nullable().optional(),
});
const runtimeSchema = z.discriminatedUnion('type', [z.object({ type: z.literal('heartbeat') }), outputSchema, resultSchema]);

export type RuntimeMessage =
  | { readonly kind: 'heartbeat' }
  | { readonly kind: 'output'; readonly invocationId: string; readonly data: string }
  | { readonly kind: 'result'; readonly invocationId: string; readonly exitCode: number; readonly output: string | null; readonly error: string | null; readonly outputTruncated: boolean }
  | { readonly kind: 'enroll' }
  | { readonly kind: 'invalid'; readonly message: string };

export function parseRuntimeMessage(raw: unknown): RuntimeMessage {
  if (raw !== null && typeof raw === 'object' && (raw as { type?: unknown }).type === 'enroll') return { kind: 'enroll' };
  const parsed = safeParseCut(runtimeSchema, raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'type';
    return { kind: 'invalid', message: `${where}: ${issue ? requirementOf(issue) : 'invalid'}; messages are heartbeat, invocation.output, invocation.result` };
  }
  const m = parsed.data;
  if (m.type === 'heartbeat') return { kind: 'heartbeat' };
  if (m.type === 'invocation.output') return { kind: 'output', invocationId: m.invocation_id, data: m.data };
  return { kind: 'result', invocationId: m.invocation_id, exitCode: m.exit_code, output: m.output ?? null, error: m.error ?? null, outputTruncated: m.output_truncated === true };
}

/** JSON.parse of a text frame; null when it is not JSON (or is binary). */
export function decodeFrame(data: Buffer, isBinary: boolean): unknown {
  if (isBinary) return undefined;
  try {
    return JSON.parse(data.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export const gatewayMessages = {
  enrolled: (agentId: string, agentKey: string | null, leaseMs: number) =>
    JSON.stringify({ type: 'enrolled', agent_id: agentId, ...(agentKey === null ? {} : { agent_key: agentKey }), lease_ms: leaseMs }),
  error: (code: ProtocolErrorCode, message: string) => JSON.stringify({ type: 'error', code, message }),
  dispatch: (p: { invocationId: string; toolName: string; arguments: Record<string, unknown>; timeoutMs: number }) =>
    JSON.stringify({ type: 'invocation.dispatch', invocation_id: p.invocationId, tool_name: p.toolName, arguments: p.arguments, timeout_ms: p.timeoutMs }),
  cancel: (invocationId: string) => JSON.stringify({ type: 'invocation.cancel', invocation_id: invocationId }),
  /** A graceful stop began: no more dispatches on this connection; what runs may finish until the 1001 close. */
  draining: () => JSON.stringify({ type: 'draining' }),
};
