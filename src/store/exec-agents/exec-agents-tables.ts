/**
 * The exec agents aggregate's tables (join keys and enrolled agents), declared once for both backends:
 * what every query in exec-agents-store.ts is checked against at compile time. Created by SQLite migration
 * 007 and PostgreSQL migration 009-exec; test/contract/store-schema.test.ts compares this declaration with
 * both live schemas. Names are unique among a project's live agents (the partial index
 * exec_agents_live_name, `WHERE deleted_at IS NULL`).
 */
import { generated, integer, maybeTime, nullable, text, time, type TablesOf } from '../sql/table-schema.js';


export const EXEC_AGENTS_SCHEMA = {
  exec_join_keys: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    name: nullable(text()),
    key_hash: text(),
    created_at: time(),
    revoked_at: maybeTime(),
  },
  exec_agents: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    registration_name: text(),
    description: nullable(text()),
    /** JSON list of workspace ids. */
    workspace_ids: text(),
    key_hash: text(),
    join_key_id: text(),
    /** JSON of the manifest (core/exec/agent-records.ts Manifest). */
    manifest: text(),
    manifest_hash: text(),
    created_at: time(),
    enrolled_at: time(),
    last_seen_at: time(),
    updated_at: time(),
    deleted_at: maybeTime(),
  },
} as const;

export type ExecAgentsTables = TablesOf<typeof EXEC_AGENTS_SCHEMA>;
