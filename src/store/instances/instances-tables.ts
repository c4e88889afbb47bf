/**
 * The instance registry's table (issue 12), declared once for both backends: one row per registered
 * gateway instance, its heartbeat renewed every third of the lease. Created by SQLite migration 016 and
 * PostgreSQL migration 003-webhooks (released migrations are history and are never edited);
 * test/contract/store-schema.test.ts compares this declaration with both live schemas. Times are wall
 * clock milliseconds. SQLite's rows also name the worker thread (several gateways share a process under
 * `serve --workers N`); PostgreSQL's replicas are told apart by host and pid.
 */
import { integer, onlyIn, text, time, type TablesOf } from '../sql/table-schema.js';

export const INSTANCES_SCHEMA = {
  gateway_instances: {
    id: text(),
    pid: integer(),
    thread_id: onlyIn('sqlite', integer()),
    host: text(),
    /** The pid namespace (instances-liveness.ts): a pid is probed only within the same one. */
    pid_scope: text(),
    started_at: time(),
    heartbeat_at: time(),
  },
} as const;

export type InstancesTables = TablesOf<typeof INSTANCES_SCHEMA>;
