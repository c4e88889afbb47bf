/**
 * The wire shapes of batches (OpenAI's Batch object and its output/error file lines), from stored rows.
 */
import { randomBytes } from 'node:crypto';
import type { RequestCounts } from '../core/batches/batch-machine.js';
import type { BatchRow, LineRow } from '../core/store/batches-store.js';

export const newBatchId = (): string => `batch_${randomBytes(12).toString('hex')}`;

const stamp = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

export function batchObject(row: BatchRow, counts: RequestCounts): Record<string, unknown> {
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    errors: row.errors === null ? null : (JSON.parse(row.errors) as unknown),
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    created_at: stamp(row.created_at),
    in_progress_at: stamp(row.in_progress_at),
    expires_at: stamp(row.expires_at),
    finalizing_at: stamp(row.finalizing_at),
    completed_at: stamp(row.completed_at),
    failed_at: stamp(row.failed_at),
    expired_at: stamp(row.expired_at),
    cancelling_at: stamp(row.cancelling_at),
    cancelled_at: stamp(row.cancelled_at),
    request_counts: { total: counts.total, completed: counts.completed, failed: counts.failed },
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as unknown),
  };
}

/** A line is a success (output file) when the gateway answered it 2xx; everything else is an error line. */
export function isSuccess(line: LineRow): boolean {
  return line.status_code !== null && line.status_code >= 200 && line.status_code < 300;
}

/** One output/error file line: the answer as a client would have had it, or why there is none. */
export function resultLine(batchId: string, line: LineRow): string {
  const id = `batch_req_${batchId.slice('batch_'.length)}_${line.idx}`;
  if (line.status_code !== null) {
    let body: unknown = line.response;
    try {
      body = JSON.parse(line.response ?? 'null');
    } catch {
      // kept as text: a body that is not JSON is reported as it came
    }
    return JSON.stringify({ id, custom_id: line.custom_id, response: { status_code: line.status_code, request_id: line.request_id, body }, error: null });
  }
  return JSON.stringify({ id, custom_id: line.custom_id, response: null, error: { code: line.error_code, message: line.error_message, line: line.idx + 1 } });
}
