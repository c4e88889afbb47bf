/**
 * The invocation state machine (docs/exec.md "Invocations"), pure: every transition takes the record and
 * the time and returns the next record with the events it emits, or null when the record's state does not
 * allow it (a late result after a timeout, a second cancel), which callers ignore or refuse.
 *
 *   queued ──> dispatched ──> running ──> completed | failed
 *     ^ (approved)   └───────────────────────^
 *   pending_approval ──> failed (rejected, expired)
 *   any non-terminal ──> cancelled (client) | failed (timeout, agent offline, gateway restarted)
 *
 * The timeout clock starts when the invocation becomes ready to run (created without an approval, or
 * approved): `timeout_ms` covers the wait for an agent and the run, so an approval's own chain of stages
 * never counts against it. A timeout is a failure with `error.code: timeout` and the `exec.timeout` event
 * in place of `exec.failed`; every other failure emits `exec.failed`.
 */
import type { ToolRisk } from './agent-registry.js';
import { execEvents, type ExecEvent } from './exec-events.js';

export const INVOCATION_STATUSES = ['queued', 'pending_approval', 'dispatched', 'running', 'completed', 'failed', 'cancelled'] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];

const TERMINAL: ReadonlySet<InvocationStatus> = new Set(['completed', 'failed', 'cancelled']);
export const isTerminal = (status: InvocationStatus): boolean => TERMINAL.has(status);

export interface InvocationError {
  readonly code: string;
  readonly message: string;
}

export interface Invocation {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly status: InvocationStatus;
  readonly risk: ToolRisk;
  readonly agentId: string | null;
  readonly approvalId: string | null;
  readonly timeoutMs: number;
  readonly exitCode: number | null;
  readonly durationMs: number | null;
  readonly output: string;
  readonly outputTruncated: boolean;
  readonly error: InvocationError | null;
  readonly createdAt: number;
  /** When the timeout clock started (creation, or the approval); null while an approval is pending. */
  readonly readyAt: number | null;
  readonly dispatchedAt: number | null;
  readonly completedAt: number | null;
}

export interface Transition {
  readonly invocation: Invocation;
  readonly events: readonly ExecEvent[];
}

export interface NewInvocation {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly risk: ToolRisk;
  readonly timeoutMs: number;
  /** Set when the tool needs an approval: the invocation waits for it. */
  readonly approvalId: string | null;
}

export function createInvocation(input: NewInvocation, now: number): Invocation {
  const waits = input.approvalId !== null;
  return {
    ...input,
    status: waits ? 'pending_approval' : 'queued',
    agentId: null,
    exitCode: null,
    durationMs: null,
    output: '',
    outputTruncated: false,
    error: null,
    createdAt: now,
    readyAt: waits ? null : now,
    dispatchedAt: null,
    completedAt: null,
  };
}

/** When the invocation times out; null while it waits for an approval or once it is over. */
export function deadlineOf(inv: Invocation): number | null {
  if (isTerminal(inv.status) || inv.readyAt === null) return null;
  return inv.readyAt + inv.timeoutMs;
}

/** What the agent gets as its own timeout: what is left of the invocation's. */
export function remainingMs(inv: Invocation, now: number): number {
  const deadline = deadlineOf(inv);
  return deadline === null ? inv.timeoutMs : Math.max(1, deadline - now);
}

/** The approval was accepted: the invocation is ready to run, and its timeout clock starts. */
export function approve(inv: Invocation, now: number): Invocation | null {
  if (inv.status !== 'pending_approval') return null;
  return { ...inv, status: 'queued', readyAt: now };
}

export function dispatch(inv: Invocation, agentId: string, now: number): Transition | null {
  if (inv.status !== 'queued') return null;
  const next: Invocation = { ...inv, status: 'dispatched', agentId, dispatchedAt: now };
  const event = execEvents.dispatched({ invocationId: inv.id, toolName: inv.toolName, workspaceId: inv.workspaceId, agentId, risk: inv.risk, at: now });
  return { invocation: next, events: [event] };
}

/** The agent's first output: the tool is running. */
export function markRunning(inv: Invocation): Invocation | null {
  return inv.status === 'dispatched' ? { ...inv, status: 'running' } : null;
}

export interface AgentResult {
  readonly exitCode: number;
  /** The agent's error text, if it sent one (the failure's message). */
  readonly error: string | null;
}

/**
 * The agent's result: exit 0 completes, anything else fails with `non_zero_exit` (docs/exec.md protocol).
 * A failure reported once the deadline has passed is the timeout's doing (the agent was sent what was left
 * of `timeout_ms` and stops the command then): it ends as a timeout, with `exec.timeout`, whichever of the
 * agent's report and the gateway's own clock tick comes first.
 */
export function finish(inv: Invocation, result: AgentResult, now: number): Transition | null {
  if (inv.status !== 'dispatched' && inv.status !== 'running') return null;
  if (result.exitCode !== 0) {
    const late = timeOut(inv, now);
    if (late) return late;
  }
  const durationMs = Math.max(0, now - (inv.dispatchedAt ?? now));
  const base = { ...inv, exitCode: result.exitCode, durationMs, completedAt: now };
  if (result.exitCode === 0) {
    return {
      invocation: { ...base, status: 'completed' },
      events: [execEvents.completed({ invocationId: inv.id, durationMs, exitCode: result.exitCode, at: now })],
    };
  }
  const error = { code: 'non_zero_exit', message: result.error ?? `The tool exited with code ${result.exitCode}.` };
  return {
    invocation: { ...base, status: 'failed', error },
    events: [execEvents.failed({ invocationId: inv.id, errorCode: error.code, errorMessage: error.message, at: now })],
  };
}

/** Any other failure (agent offline, approval rejected or expired, gateway restarted): `exec.failed`. */
export function fail(inv: Invocation, code: string, message: string, now: number, before: readonly ExecEvent[] = []): Transition | null {
  if (isTerminal(inv.status)) return null;
  const durationMs = inv.dispatchedAt === null ? null : Math.max(0, now - inv.dispatchedAt);
  return {
    invocation: { ...inv, status: 'failed', error: { code, message }, durationMs, completedAt: now },
    events: [...before, execEvents.failed({ invocationId: inv.id, errorCode: code, errorMessage: message, at: now })],
  };
}

/** The deadline passed while queued, dispatched or running. */
export function timeOut(inv: Invocation, now: number): Transition | null {
  const deadline = deadlineOf(inv);
  if (deadline === null || now < deadline || inv.readyAt === null) return null;
  const elapsedMs = now - inv.readyAt;
  const message = `The invocation did not finish within its timeout of ${inv.timeoutMs} ms.`;
  const durationMs = inv.dispatchedAt === null ? null : Math.max(0, now - inv.dispatchedAt);
  return {
    invocation: { ...inv, status: 'failed', error: { code: 'timeout', message }, durationMs, completedAt: now },
    events: [execEvents.timeout({ invocationId: inv.id, timeoutMs: inv.timeoutMs, elapsedMs, at: now })],
  };
}

/** The client's cancel; SPEC has no event for it. Terminal invocations refuse (409 invocation_terminal). */
export function cancel(inv: Invocation, now: number): Transition | null {
  if (isTerminal(inv.status)) return null;
  const durationMs = inv.dispatchedAt === null ? null : Math.max(0, now - inv.dispatchedAt);
  return {
    invocation: { ...inv, status: 'cancelled', error: { code: 'cancelled', message: 'The invocation was cancelled.' }, durationMs, completedAt: now },
    events: [],
  };
}
