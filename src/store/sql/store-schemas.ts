/**
 * Every table declared once (table-schema.ts), by aggregate: the list test/contract/store-schema.test.ts
 * checks against both backends' migrated schemas. A store moved onto programs adds its declaration here.
 */
import { BATCHES_SCHEMA } from '../batches/batches-tables.js';
import { EXEC_AGENTS_SCHEMA } from '../exec-agents/exec-agents-tables.js';
import { IDENTITY_SCHEMA } from '../identity/identity-tables.js';
import type { SchemaDef } from './table-schema.js';

export const STORE_SCHEMAS: Readonly<Record<string, SchemaDef>> = {
  batches: BATCHES_SCHEMA,
  identity: IDENTITY_SCHEMA,
  execAgents: EXEC_AGENTS_SCHEMA,
};
