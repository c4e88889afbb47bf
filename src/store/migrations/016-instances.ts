/**
 * Migration: several gateway instances on one store (issue 12; docs/decisions.md "Several instances on one
 * store: leases"). Every `startGateway` (a process, or a worker thread of `serve --workers N`) registers a
 * row in `gateway_instances` and heartbeats it (store/instances-registry.ts); a row whose heartbeat is
 * older than the lease is a dead instance, and is deleted by whichever instance sees it first.
 *
 * - Webhook deliveries are claimed with a lease: `claimed_by` (an instance id) and `claim_expires_at`
 *   (Unix ms, wall clock) are set with `state = 'sending'`; a claim whose instance is gone or whose lease
 *   ran out goes back to `pending` (store/webhook-deliveries-repo.ts). The partial index holds only the
 *   claimed rows, so that sweep never walks the history.
 * - Work that start-up recovery fails records the instance that took it (`owner_instance`): a dispatched
 *   invocation, a background response, a running batch line. Recovery touches only rows whose owner is
 *   not a registered instance; rows written before this migration have none, and count as a dead owner's.
 */
export const migrationInstances = `
CREATE TABLE gateway_instances (
  id TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  thread_id INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid_scope TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE webhook_deliveries ADD COLUMN claimed_by TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN claim_expires_at INTEGER;
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries(claimed_by, claim_expires_at) WHERE state = 'sending';

ALTER TABLE exec_invocations ADD COLUMN owner_instance TEXT;
ALTER TABLE responses ADD COLUMN owner_instance TEXT;
CREATE INDEX responses_running ON responses(owner_instance) WHERE status IN ('queued', 'in_progress');
ALTER TABLE batch_lines ADD COLUMN owner_instance TEXT;
`;
