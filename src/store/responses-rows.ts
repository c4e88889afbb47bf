/**
 * Stored responses' rows as both stores read them (SQLite: responses-repo.ts, PostgreSQL:
 * postgres/responses-store.ts): the same column names in both schemas, one mapping.
 */
import type { Item, StoredResponse } from '../core/store/responses-store.js';
import { fromJson } from './json-column.js';

export interface ResponseRow {
  id: string;
  project_id: string;
  workspace_id: string | null;
  previous_response_id: string | null;
  status: string;
  input: string;
  body: string;
}

export const RESPONSE_COLUMNS = 'id, project_id, workspace_id, previous_response_id, status, input, body';

export const storedResponseOf = (row: ResponseRow): StoredResponse => ({
  id: row.id,
  projectId: row.project_id,
  workspaceId: row.workspace_id,
  previousResponseId: row.previous_response_id,
  status: row.status,
  input: fromJson<Item[]>(row.input),
  body: fromJson<Record<string, unknown>>(row.body),
});
