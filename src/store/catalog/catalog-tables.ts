/**
 * The catalog aggregate's tables (core/store/catalog-store.ts: projects, workspaces, endpoints, API keys
 * and their values' hashes), declared once for both backends. Created by SQLite migrations 001 and 005
 * and PostgreSQL migration 001 (history: released migrations are never edited);
 * test/contract/store-schema.test.ts compares this declaration with both live schemas. Lists (scopes, IP
 * filters, workspace ids) are JSON text on both; `operational` and `zero_data_retention` are 0/1 integers
 * on both (PostgreSQL keeps SQLite's form, with a CHECK).
 * The store is written once over it: catalog-store.ts (the port) and the files it names.
 */
import type { ApiKeyRecord, EndpointRecord, ProjectRecord, WorkspaceRecord } from '../../core/records.js';
import { integer, maybeText, maybeTime, nullable, text, time, type TablesOf } from '../sql/table-schema.js';


export const CATALOG_SCHEMA = {
  projects: {
    id: text(),
    uuid: text(),
    slug: text(),
    name: text(),
    plan: text<ProjectRecord['plan']>(),
    requests_per_minute: integer(),
    tokens_per_minute: integer(),
    default_workspace_id: maybeText(),
    default_workspace_set_at: maybeTime(),
    created_at: time(),
    updated_at: time(),
  },
  workspaces: {
    project_id: text(),
    id: text(),
    name: text(),
    routing_mode: nullable(text<NonNullable<WorkspaceRecord['routingMode']>>()),
    routing_mode_default: text<WorkspaceRecord['routingModeDefault']>(),
    routing_mode_set_at: maybeTime(),
    pinned_endpoint_id: maybeText(),
    operational: integer(),
    zero_data_retention: integer(),
    created_at: time(),
    deleted_at: maybeTime(),
  },
  endpoints: {
    id: text(),
    project_id: text(),
    slug: text(),
    name: text(),
    kind: text<EndpointRecord['kind']>(),
    tier: text<EndpointRecord['tier']>(),
    status: text<EndpointRecord['status']>(),
    region: text(),
    workspace_ids: text(),
    model: text(),
    upstream: text(),
    router: maybeText(),
    created_at: time(),
    updated_at: time(),
    deleted_at: maybeTime(),
  },
  api_keys: {
    id: text(),
    project_id: text(),
    name: maybeText(),
    prefix: text(),
    scopes: text(),
    allowed_ips: text(),
    blocked_ips: text(),
    expires_at: maybeTime(),
    quota_requests: integer(),
    quota_window: integer(),
    endpoint_id: maybeText(),
    allowed_workspace_ids: maybeText(),
    user_id: maybeText(),
    issued_by: maybeText(),
    source: text<ApiKeyRecord['source']>(),
    created_at: time(),
    revoked_at: maybeTime(),
    revoked_reason: maybeText(),
  },
  api_key_secrets: {
    hash: text(),
    key_id: text(),
    created_at: time(),
    valid_until: maybeTime(),
  },
} as const;

export type CatalogTables = TablesOf<typeof CATALOG_SCHEMA>;
