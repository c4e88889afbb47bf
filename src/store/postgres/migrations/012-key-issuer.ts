/** PostgreSQL: who received a key's current value, as SQLite's migration 020 (what the column holds is said there). */
export const pgMigrationKeyIssuer = `
ALTER TABLE api_keys ADD COLUMN issued_by TEXT;
`;
