/**
 * Every table declared once (table-schema.ts), by aggregate: the list test/contract/store-schema.test.ts
 * checks against both backends' migrated schemas. A store moved onto programs adds its declaration here.
 */
import { BATCHES_SCHEMA } from '../batches/batches-tables.js';
import { WEBHOOKS_SCHEMA } from '../webhooks/webhooks-tables.js';
import { CATALOG_SCHEMA } from '../catalog/catalog-tables.js';
import { EXEC_INVOCATIONS_SCHEMA } from '../exec-invocations/exec-invocations-tables.js';
import { RESPONSES_SCHEMA } from '../responses/responses-tables.js';
import { ROUTER_SCHEMA } from '../router/router-tables.js';
import { FILES_SCHEMA } from '../files/files-tables.js';
import { EXEC_AGENTS_SCHEMA } from '../exec-agents/exec-agents-tables.js';
import { IDENTITY_SCHEMA } from '../identity/identity-tables.js';
import { USAGE_SCHEMA } from '../usage/usage-tables.js';
import { INSTANCES_SCHEMA } from '../instances/instances-tables.js';
import type { SchemaDef } from './table-schema.js';

export const STORE_SCHEMAS: Readonly<Record<string, SchemaDef>> = {
  batches: BATCHES_SCHEMA,
  webhooks: WEBHOOKS_SCHEMA,
  catalog: CATALOG_SCHEMA,
  execInvocations: EXEC_INVOCATIONS_SCHEMA,
  responses: RESPONSES_SCHEMA,
  router: ROUTER_SCHEMA,
  identity: IDENTITY_SCHEMA,
  execAgents: EXEC_AGENTS_SCHEMA,
  files: FILES_SCHEMA,
  usage: USAGE_SCHEMA,
  instances: INSTANCES_SCHEMA,
};
