/**
 * PostgreSQL: webhook endpoints, events and deliveries, as SQLite's migrations 004 and 016 (what each
 * column holds is said there), and the registry of the replicas that claim deliveries.
 *
 * - `events` is a TEXT[] (a subscription test is `type = ANY(events)`), `metadata` JSONB.
 * - No foreign key to `projects` (001-catalog): groups stand alone. Deleting an endpoint deletes its
 *   deliveries and orphaned events in its own transaction, as in SQLite.
 * - `gateway_instances` is the delivery claimants' registry (store/postgres/instances-registry.ts): a
 *   claim whose instance has no row here, or whose lease ran out, goes back to `pending`. Each replica's
 *   SQLite file keeps its own registry for the work that stays in that file.
 */
export const pgMigrationWebhooks = `
CREATE TABLE webhook_endpoints (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  url TEXT NOT NULL,
  description TEXT,
  secret_sealed TEXT NOT NULL,
  events TEXT[] NOT NULL,
  is_active BOOLEAN NOT NULL,
  metadata JSONB NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_project ON webhook_endpoints (project_id, seq);

CREATE TABLE webhook_events (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE webhook_deliveries (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed')),
  attempt_count INTEGER NOT NULL,
  next_attempt_at BIGINT,
  http_status INTEGER,
  response_body TEXT,
  error_message TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  claimed_by TEXT,
  claim_expires_at BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_due ON webhook_deliveries (webhook_id, next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_by, claim_expires_at) WHERE state = 'sending';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (seq) WHERE state IN ('delivered', 'failed');

CREATE TABLE gateway_instances (
  id TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid_scope TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL
);
`;
