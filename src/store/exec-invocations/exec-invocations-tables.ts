/**
 * The exec invocations aggregate's tables, declared once for both backends: what every query in
 * exec-invocations-store.ts is checked against at compile time. Created by SQLite migrations 008, 016
 * (owner_instance) and 017 (requested_by_*) and PostgreSQL migrations 009 and 010 (history: released
 * migrations are never edited); test/contract/store-schema.test.ts compares this declaration with both
 * live schemas. `arguments` and `chain` are JSON text on both.
 */
import type { ToolRisk } from '../../core/exec/agent-registry.js';
import type { ApprovalState } from '../../core/exec/approval-machine.js';
import type { InvocationStatus } from '../../core/exec/invocation-machine.js';
import { boolean, generated, integer, maybeText, maybeTime, nullable, text, time, type GatewayInstancesRead, type TablesOf } from '../sql/table-schema.js';


export const EXEC_INVOCATIONS_SCHEMA = {
  exec_invocations: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    workspace_id: text(),
    tool_name: text(),
    arguments: text(),
    status: text<InvocationStatus>(),
    risk: text<ToolRisk>(),
    agent_id: maybeText(),
    approval_id: maybeText(),
    timeout_ms: integer(),
    exit_code: nullable(integer()),
    duration_ms: nullable(integer()),
    output: text(),
    output_truncated: boolean(),
    error_code: maybeText(),
    error_message: maybeText(),
    created_at: time(),
    ready_at: maybeTime(),
    /** When a queued, dispatched or running invocation times out (invocation-machine.ts deadlineOf). */
    deadline_at: maybeTime(),
    dispatched_at: maybeTime(),
    completed_at: maybeTime(),
    /** The instance that dispatched it (migration 016): only its death lets recovery fail it. */
    owner_instance: maybeText(),
  },
  exec_approvals: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    invocation_id: text(),
    workspace_id: text(),
    tool_name: text(),
    risk: text<ToolRisk>(),
    state: text<ApprovalState>(),
    chain: text(),
    stage: integer(),
    stage_deadline_at: maybeTime(),
    decided_by: maybeText(),
    reason: maybeText(),
    created_at: time(),
    decided_at: maybeTime(),
    requested_by_key: maybeText(),
    requested_by_user: maybeText(),
  },
  exec_idempotency_keys: {
    project_id: text(),
    key: text(),
    body_hash: text(),
    invocation_id: text(),
    expires_at: time(),
  },
} as const;

export type ExecInvocationsTables = TablesOf<typeof EXEC_INVOCATIONS_SCHEMA> & GatewayInstancesRead;
