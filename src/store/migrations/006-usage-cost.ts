/**
 * Usage and spend (README "Usage and spend").
 *
 * `usage_events.model`: the endpoint's public model id when the turn ran, recorded by the charging layer,
 * so usage by model stays true after an endpoint changes model. Rows written before this migration get the
 * model their endpoint has now: the best that is known (the one UPDATE below; rows of an endpoint since
 * erased keep NULL).
 *
 * `usage_events.cost_nanos`: what the turn cost in nano-dollars (1e-9 USD), an exact integer computed from
 * the endpoint's configured prices and the recorded service-tier multiplier (core/usage/cost.ts). NULL: the
 * endpoint had no price, which the usage API reports as unpriced requests rather than as free. Rows written
 * before this migration are unpriced: their prices were never known.
 *
 * `budgets.*_cents`: money caps set through the management API, beside the token caps.
 *
 * No new index: the usage API reads a time range of one project, which usage_events_project_time
 * (migration 002) already serves; another index would slow every ledger insert for the hot path.
 */
export const migration006 = `
ALTER TABLE usage_events ADD COLUMN model TEXT;
ALTER TABLE usage_events ADD COLUMN cost_nanos INTEGER;
UPDATE usage_events SET model = (SELECT json_extract(e.model, '$.id') FROM endpoints e WHERE e.id = usage_events.endpoint_id);
ALTER TABLE budgets ADD COLUMN hourly_cents INTEGER;
ALTER TABLE budgets ADD COLUMN daily_cents INTEGER;
ALTER TABLE budgets ADD COLUMN hard_cap_cents INTEGER;
`;
