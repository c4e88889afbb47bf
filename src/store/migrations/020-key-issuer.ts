/**
 * Migration: who received a key's current value (docs/decisions.md "Who decides an approval"). An API key
 * that creates or rotates another key through the management API receives its value, so the two are one
 * holder: `issued_by` is that key's id, or the dashboard user's id for a value shown on the dashboard, and
 * NULL for a value handed to an operator (config file, CLI). A key may not decide an approval asked for by
 * a principal in its issuance chain. Keys from before this migration have none.
 */
export const migrationKeyIssuer = `
ALTER TABLE api_keys ADD COLUMN issued_by TEXT;
`;
