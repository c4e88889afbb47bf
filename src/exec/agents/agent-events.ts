/**
 * The events of the agents' side (docs/exec.md "Events"): `exec.agent_enrolled` with SPEC's payload
 * exactly, and the `agent.*` / `join_key.*` lifecycle types, whose payloads SPEC leaves to us (SPEC
 * "Event types": "not shown"); ours are documented in docs/exec.md. Timestamps are ISO 8601, as in
 * SPEC's exec payloads. They are returned as data so the caller writes them in the transaction of the
 * state change (store/webhooks/webhook-outbox.ts).
 */
import type { EventType } from '../../core/webhooks/event-types.js';
import type { AgentRecord, JoinKeyRecord } from './records.js';

export interface AgentEvent {
  readonly type: EventType;
  readonly data: Record<string, unknown>;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const agentRef = (a: AgentRecord) => ({ agent_id: a.id, registration_name: a.registrationName });

export const agentEvents = {
  joinKeyCreated: (k: JoinKeyRecord): AgentEvent => ({ type: 'join_key.created', data: { join_key_id: k.id, name: k.name, created_at: iso(k.createdAt) } }),
  joinKeyRevoked: (k: JoinKeyRecord, at: number): AgentEvent => ({ type: 'join_key.revoked', data: { join_key_id: k.id, name: k.name, revoked_at: iso(at) } }),
  created: (a: AgentRecord): AgentEvent => ({
    type: 'agent.created',
    data: { ...agentRef(a), join_key_id: a.joinKeyId, workspace_ids: a.workspaceIds, created_at: iso(a.createdAt) },
  }),
  enrolled: (a: AgentRecord): AgentEvent => ({
    type: 'agent.enrolled',
    data: { ...agentRef(a), manifest_hash: a.manifestHash, tools: a.manifest.tools.map((t) => t.name), enrolled_at: iso(a.enrolledAt) },
  }),
  /** SPEC "Payloads of emitted exec events": project_id is the project's UUID. */
  execEnrolled: (a: AgentRecord, projectUuid: string): AgentEvent => ({
    type: 'exec.agent_enrolled',
    data: { agent_id: a.id, registration_name: a.registrationName, project_id: projectUuid, manifest_hash: a.manifestHash, enrolled_at: iso(a.enrolledAt) },
  }),
  updated: (a: AgentRecord, changed: readonly string[]): AgentEvent => ({
    type: 'agent.updated',
    data: { ...agentRef(a), changed, description: a.description, workspace_ids: a.workspaceIds, updated_at: iso(a.updatedAt) },
  }),
  deleted: (a: AgentRecord, at: number): AgentEvent => ({ type: 'agent.deleted', data: { ...agentRef(a), deleted_at: iso(at) } }),
  keyRotated: (a: AgentRecord, at: number): AgentEvent => ({ type: 'agent.key_rotated', data: { ...agentRef(a), rotated_at: iso(at) } }),
};
