/**
 * The PostgreSQL migrations, in the order they apply. Each is named, and the names applied are kept in
 * `switchboard_migrations`: a new migration is appended, never inserted or edited once released. One file
 * per aggregate group; tables of one group do not reference another group's with foreign keys, so each
 * group's store can be built and tested on its own.
 */
import { pgMigrationCatalog } from './001-catalog.js';
import { pgMigrationIdentity } from './002-identity.js';
import { pgMigrationWebhooks } from './003-webhooks.js';
import { pgMigrationUsage } from './004-usage.js';
import { pgMigrationRouter } from './005-router.js';
import { pgMigrationResponses } from './006-responses.js';
import { pgMigrationFiles } from './007-files.js';
import { pgMigrationBatches } from './008-batches.js';
import { pgMigrationExec } from './009-exec.js';
import { pgMigrationApprovalRequester } from './010-approval-requester.js';
import { pgMigrationUsageRequestDetail } from './011-usage-request-detail.js';
import { pgMigrationKeyIssuer } from './012-key-issuer.js';

export interface PgMigration {
  readonly name: string;
  readonly sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  { name: '001-catalog', sql: pgMigrationCatalog },
  { name: '002-identity', sql: pgMigrationIdentity },
  { name: '003-webhooks', sql: pgMigrationWebhooks },
  { name: '004-usage', sql: pgMigrationUsage },
  { name: '005-router', sql: pgMigrationRouter },
  { name: '006-responses', sql: pgMigrationResponses },
  { name: '007-files', sql: pgMigrationFiles },
  { name: '008-batches', sql: pgMigrationBatches },
  { name: '009-exec', sql: pgMigrationExec },
  { name: '010-approval-requester', sql: pgMigrationApprovalRequester },
  { name: '011-usage-request-detail', sql: pgMigrationUsageRequestDetail },
  { name: '012-key-issuer', sql: pgMigrationKeyIssuer },
];
