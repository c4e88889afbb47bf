/**
 * Batches (issue 14): lines run through the live routes' handlers, at most batches.concurrency at once.
 * With PostgreSQL, batches and their lines are shared: every replica may claim a line (once), under its row in
 * the shared instance registry, and hears when another validated a batch (no wait for its minute sweep).
 */
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { batchFilesOf } from '../batches/batch-files.js';
import { createBatchSystem, type LinesReadyChannel } from '../batches/batch-system.js';
import type { Config } from '../config.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import type { FilesStore } from '../core/store/files-store.js';
import type { Logger } from '../log.js';
import type { BatchServices } from '../routes/batches.js';
import { createBatchLineRunner } from '../app/batches/batch-line-runner.js';
import { createSqliteCatalog } from '../store/catalog/sqlite-catalog.js';
import { BATCH_LINES_TOPIC, createBatchesStore } from '../store/batches/batches-store.js';
import type { BusyStore, StoreParts } from './store.js';
import type { SharedReplicas } from './limits.js';

export type BatchParts = Pick<BatchServices, 'batches' | 'batchesRepo' | 'batchFiles'>;

export interface BatchesDeps {
  readonly config: Config;
  readonly storage: StoreParts;
  readonly busy: BusyStore;
  readonly files: FilesStore;
  readonly chatServices: ChatServices;
  readonly shared: SharedReplicas | null;
  readonly instanceId: string;
  readonly recoveryCue: RecoveryCue;
  readonly logger: Logger;
}

export function wireBatches({ config, storage, busy, files, chatServices, shared, instanceId, recoveryCue, logger }: BatchesDeps): BatchParts {
  const batchesRepo = createBatchesStore({ ...busy.busySql, owner: shared ? shared.instances.id : instanceId });
  const batchFiles = batchFilesOf(files);
  // A line runs under its key as stored now: PostgreSQL's are all in the catalog's memory.
  const findBatchKey = storage.preloaded ? storage.preloaded.keyInProject : createSqliteCatalog(storage.db).findInProject;
  const batches = createBatchSystem({
    repo: batchesRepo,
    files: batchFiles,
    runner: createBatchLineRunner(chatServices, (projectId, keyId) => findBatchKey(projectId, keyId)),
    concurrency: config.batches.concurrency,
    maxLines: config.batches.max_lines,
    now: chatServices.now,
    logger,
    instances: recoveryCue,
    ...(shared ? { linesReady: linesReadyOver(shared, logger) } : {}),
  });
  return { batches, batchesRepo, batchFiles };
}

/** PostgreSQL's notices tell the replicas that a batch's lines are ready. */
function linesReadyOver(shared: SharedReplicas, logger: Logger): LinesReadyChannel {
  return {
    announce: () => void shared.pg.notifyChange(shared.pg.pool, BATCH_LINES_TOPIC).catch((err: unknown) => logger.warn({ err }, 'batches: telling the replicas that lines are ready failed; they find them at their next sweep')),
    listen: (fn: () => void) => shared.pg.onChange(BATCH_LINES_TOPIC, fn),
  };
}
