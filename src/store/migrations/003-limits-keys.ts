/**
 * Token budgets set through the management API (the config file's budgets are read from the file at
 * every start and never stored). A row with every cap NULL is an explicit "no budget" that overrides the
 * file; deleting the row lets the file's caps apply again. Spend is not stored: it is rebuilt from
 * usage_events at start, so it can never disagree with the ledger.
 */
export const migration003 = `
CREATE TABLE budgets (
  project_id TEXT NOT NULL REFERENCES projects(id),
  level TEXT NOT NULL CHECK (level IN ('endpoint', 'workspace')),
  target_id TEXT NOT NULL,
  hourly_tokens INTEGER,
  daily_tokens INTEGER,
  hard_cap_tokens INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, level, target_id)
);
`;
