/** PostgreSQL: who asked for an approval, as SQLite's migration 017 (what each column holds is said there). */
export const pgMigrationApprovalRequester = `
ALTER TABLE exec_approvals ADD COLUMN requested_by_key TEXT;
ALTER TABLE exec_approvals ADD COLUMN requested_by_user TEXT;
`;
