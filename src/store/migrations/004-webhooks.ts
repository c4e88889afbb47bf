/**
 * Webhook endpoints, the event outbox and delivery records (SPEC "Webhook endpoint", "Webhook delivery
 * record", "Events"). Times are Unix milliseconds. An event is written (and fanned out to one delivery
 * row per active subscriber) in the transaction of the state change that causes it; the dispatcher works
 * the `pending` rows whose `next_attempt_at` has come, through the partial indexes below (oldest due
 * first overall, and per endpoint).
 *
 * Delivery `state`: pending (due at next_attempt_at) -> sending (claimed by the running dispatcher; put
 * back to pending at start, so an attempt lost to a crash is made again) -> delivered | failed, or back to
 * pending with the next retry time. Delivery ids are random and never looked up, so they get no unique
 * index (the cost of indexing random text, measured for the usage ledger, is not worth a 96-bit id).
 */
export const migration004 = `
CREATE TABLE webhook_endpoints (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  url TEXT NOT NULL,
  description TEXT,
  secret_sealed TEXT NOT NULL,
  events TEXT NOT NULL,
  is_active INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_project ON webhook_endpoints(project_id, seq);

CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE webhook_deliveries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  state TEXT NOT NULL,
  attempt_count INTEGER NOT NULL,
  next_attempt_at INTEGER,
  http_status INTEGER,
  response_body TEXT,
  error_message TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_due ON webhook_deliveries(webhook_id, next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, seq);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
`;
