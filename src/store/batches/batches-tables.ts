/**
 * The batches aggregate's tables, declared once for both backends: what every query in batches-store.ts
 * is checked against at compile time. Created by SQLite migrations 011 and 016 and PostgreSQL migration
 * 008 (history: released migrations are never edited); test/contract/store-schema.test.ts compares this
 * declaration with both live schemas.
 */
import type { BatchStatus } from '../../core/batches/batch-machine.js';
import { generated, integer, maybeText, maybeTime, nullable, text, time, type GatewayInstancesRead, type TablesOf } from '../sql/table-schema.js';


export const BATCHES_SCHEMA = {
  batches: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    key_id: text(),
    workspace_named: maybeText(),
    workspace_named_by: text(),
    endpoint: text(),
    input_file_id: text(),
    completion_window: text(),
    status: text<BatchStatus>(),
    metadata: maybeText(),
    errors: maybeText(),
    output_file_id: maybeText(),
    error_file_id: maybeText(),
    created_at: time(),
    expires_at: time(),
    in_progress_at: maybeTime(),
    finalizing_at: maybeTime(),
    completed_at: maybeTime(),
    failed_at: maybeTime(),
    expired_at: maybeTime(),
    cancelling_at: maybeTime(),
    cancelled_at: maybeTime(),
  },
  batch_lines: {
    batch_id: text(),
    idx: integer(),
    custom_id: maybeText(),
    body: maybeText(),
    state: text<'pending' | 'running' | 'done'>(),
    not_before: generated(integer()),
    status_code: nullable(integer()),
    request_id: maybeText(),
    response: maybeText(),
    error_code: maybeText(),
    error_message: maybeText(),
    owner_instance: maybeText(),
  },
} as const;

export type BatchesTables = TablesOf<typeof BATCHES_SCHEMA> & GatewayInstancesRead;

/** The column each status stamps when a batch enters it (`in_progress_at`, ...). */
export const STATUS_COLUMN = {
  validating: 'created_at',
  in_progress: 'in_progress_at',
  finalizing: 'finalizing_at',
  completed: 'completed_at',
  failed: 'failed_at',
  expired: 'expired_at',
  cancelling: 'cancelling_at',
  cancelled: 'cancelled_at',
} as const satisfies Record<BatchStatus, keyof BatchesTables['batches']>;
