/**
 * Migration: who asked for an approval (docs/exec.md "Who decides"; issue 31). An approval records the API
 * key that created its invocation and the user owning that key, so that neither can decide it. Rows from
 * before this migration have neither and may be decided by any privileged principal.
 */
export const migrationApprovalRequester = `
ALTER TABLE exec_approvals ADD COLUMN requested_by_key TEXT;
ALTER TABLE exec_approvals ADD COLUMN requested_by_user TEXT;
`;
