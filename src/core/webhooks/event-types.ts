/**
 * The event types a webhook may subscribe to (SPEC "Event types", plus the legacy budget alert of SPEC
 * "Budget alert deliveries"). Subscriptions name the full dotted type. `reserved` types are accepted and
 * never delivered (SPEC Events 6); `listed` types are delivered once their family's emitter lands, and
 * then marked `emitted` here (agent.* and join_key.*: src/exec/agents/agent-events.ts, docs/exec.md).
 */

export type EventStatus = 'emitted' | 'reserved' | 'listed' | 'legacy';

export const EVENT_TYPES = {
  'exec.dispatched': 'emitted',
  'exec.completed': 'emitted',
  'exec.failed': 'emitted',
  'exec.timeout': 'emitted',
  'exec.ambiguous': 'reserved',
  'exec.approval_requested': 'emitted',
  'exec.approved': 'emitted',
  'exec.rejected': 'emitted',
  'exec.approval_escalated': 'emitted',
  'exec.approval_timed_out': 'emitted',
  'exec.agent_enrolled': 'emitted',
  'exec.agent_offline': 'emitted',
  'exec.discovery_pending': 'reserved',
  'exec.workspace_created': 'reserved',
  'exec.workspace_budget_exhausted': 'reserved',
  'agent.created': 'emitted',
  'agent.updated': 'emitted',
  'agent.deleted': 'emitted',
  'agent.enrolled': 'emitted',
  'agent.key_rotated': 'emitted',
  'join_key.created': 'emitted',
  'join_key.revoked': 'emitted',
  'batch.completed': 'listed',
  'batch.failed': 'listed',
  'batch.cancelled': 'listed',
  'response.completed': 'listed',
  'response.failed': 'listed',
  'file.uploaded': 'listed',
  'file.deleted': 'listed',
  'conversation.created': 'listed',
  'conversation.deleted': 'listed',
  'ox.alert.raised': 'listed',
  'ox.learning.cluster': 'listed',
  'budget.threshold_reached': 'legacy',
} as const satisfies Record<string, EventStatus>;

export type EventType = keyof typeof EVENT_TYPES;

/** The synthetic type of `POST /v1/webhooks/{id}/test` deliveries: sent on request, never subscribable. */
export const TEST_EVENT_TYPE = 'webhook.test';

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_TYPES, value);
}

/** Reserved types can be subscribed to but produce no deliveries. */
export function isDeliverable(type: EventType): boolean {
  return EVENT_TYPES[type] !== 'reserved';
}
