/**
 * The router aggregate's tables, declared once for both backends: per-project settings and rules, latency
 * objectives and model aliases. Created by SQLite migrations 005 and 012 and PostgreSQL migration 005
 * (history: released migrations are never edited); test/contract/store-schema.test.ts compares this
 * declaration with both live schemas. `settings` and `rules` are JSON text, read and written whole.
 *
 * The routing decision rows (router-decisions.ts) are telemetry, kept in insertion order: SQLite by its
 * rowid, PostgreSQL by a `seq` column only its table has.
 */
import { generated, integer, maybeText, nullable, onlyIn, real, text, type TablesOf } from '../sql/table-schema.js';

export const ROUTER_SCHEMA = {
  semantic_router_settings: {
    project_id: text(),
    settings: text(),
    rules: text(),
    updated_at: integer(),
  },
  endpoint_slos: {
    project_id: text(),
    endpoint_id: text(),
    ttft_ms: nullable(real()),
    tpot_ms: nullable(real()),
    created_at: integer(),
    updated_at: integer(),
  },
  model_aliases: {
    project_id: text(),
    alias: text(),
    target: text(),
    created_at: integer(),
    updated_at: integer(),
  },
  routing_decisions: {
    seq: onlyIn('postgres', generated(integer())),
    request_id: text(),
    project_id: text(),
    workspace_id: maybeText(),
    created_at: integer(),
    route_reason: text(),
    /** The sealed excerpt of the routed query (store/secret-box.ts). */
    query_preview: text(),
    /** JSON text. */
    detail: text(),
  },
} as const;

/**
 * Written only here, the catalog's rows (store/catalog/ and its config sync own them): a workspace's
 * routing fields and its project's default, as the management API changes them.
 */
type CatalogRouting = {
  workspaces: { project_id: string; id: string; routing_mode: 'semantic' | 'concrete' | null; routing_mode_set_at: number | null; pinned_endpoint_id: string | null };
  projects: { id: string; default_workspace_id: string | null; default_workspace_set_at: number | null; updated_at: number };
};

export type RouterTables = TablesOf<typeof ROUTER_SCHEMA> & CatalogRouting;
