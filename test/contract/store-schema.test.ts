/**
 * The tables declared once (src/store/sql/store-schemas.ts) against what each backend's migrations made:
 * a fresh SQLite file and a fresh PostgreSQL database, migrated by this build, must each have exactly
 * the declared columns, with the declared nullability and a type of the declared kind. The two
 * migration histories are kept by hand; this is what stops them drifting from the one declaration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/store/db.js';
import { openPostgres, type PgStore } from '../../src/store/postgres/pg-store.js';
import { STORE_SCHEMAS } from '../../src/store/sql/store-schemas.js';
import type { ColumnKind, TableDef } from '../../src/store/sql/table-schema.js';
import { freshDatabase, requirePostgres, type TestDatabase } from '../helpers/postgres.js';

interface LiveColumn {
  readonly type: string;
  readonly nullable: boolean;
}

/** The live types each declared kind may have, per dialect (lower case). */
const TYPES: Record<ColumnKind, { sqlite: readonly string[]; postgres: readonly string[] }> = {
  integer: { sqlite: ['integer'], postgres: ['integer', 'bigint'] },
  real: { sqlite: ['real'], postgres: ['double precision', 'real'] },
  text: { sqlite: ['text'], postgres: ['text'] },
  boolean: { sqlite: ['integer'], postgres: ['boolean'] },
  blob: { sqlite: ['blob'], postgres: ['bytea'] },
  text_array: { sqlite: ['text'], postgres: ['text[]'] },
  json: { sqlite: ['text'], postgres: ['jsonb'] },
};

function sqliteColumns(db: Db, table: string): Map<string, LiveColumn> {
  const info = db.prepare<[], { name: string; type: string; notnull: number; pk: number }>(`PRAGMA table_info(${table})`).all();
  // An INTEGER PRIMARY KEY is the rowid: never null, though table_info says notnull 0.
  return new Map(info.map((c) => [c.name, { type: c.type.toLowerCase(), nullable: c.notnull === 0 && c.pk === 0 }]));
}

async function postgresColumns(pg: PgStore, table: string): Promise<Map<string, LiveColumn>> {
  // An array's data_type is only 'ARRAY': its element type is in udt_name ('_text' for text[]).
  const { rows } = await pg.pool.query<{ column_name: string; data_type: string; is_nullable: string }>(
    `SELECT column_name, CASE WHEN data_type = 'ARRAY' THEN ltrim(udt_name, '_') || '[]' ELSE data_type END AS data_type, is_nullable
     FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
    [table],
  );
  return new Map(rows.map((c) => [c.column_name, { type: c.data_type.toLowerCase(), nullable: c.is_nullable === 'YES' }]));
}

/** Differences between a declaration and a live table, as readable lines (empty: they agree). */
function differences(declared: TableDef, live: Map<string, LiveColumn>, dialect: 'sqlite' | 'postgres'): string[] {
  const found: string[] = [];
  for (const [name, column] of Object.entries(declared)) {
    if (column.onlyIn !== undefined && column.onlyIn !== dialect) {
      if (live.has(name)) found.push(`${name}: declared for ${column.onlyIn} only, in the ${dialect} table too`);
      continue;
    }
    const actual = live.get(name);
    if (!actual) {
      found.push(`${name}: declared, missing`);
      continue;
    }
    if (!TYPES[column.kind][dialect].includes(actual.type)) found.push(`${name}: declared ${column.kind}, is ${actual.type}`);
    // A generated column may be declared non-null and filled by a default: only a nullable live column
    // declared non-null (or the reverse) is a difference.
    if (actual.nullable !== column.nullable) found.push(`${name}: declared ${column.nullable ? 'nullable' : 'not null'}, is ${actual.nullable ? 'nullable' : 'not null'}`);
  }
  for (const name of live.keys()) if (!(name in declared)) found.push(`${name}: in the table, not declared`);
  return found;
}

const tables = Object.values(STORE_SCHEMAS).flatMap((schema) => Object.entries(schema));

describe('tables declared once, as both backends migrate them', () => {
  let sqlite: Db;
  let database: TestDatabase;
  let pg: PgStore;

  beforeAll(async () => {
    await requirePostgres();
    sqlite = openDatabase(':memory:');
    database = await freshDatabase();
    pg = await openPostgres({ url: database.url, poolSize: 2, listen: false });
  });
  afterAll(async () => {
    sqlite?.close();
    await pg?.close();
    await database?.drop();
  });

  it('declares at least the batches and webhook tables (the list cannot silently be empty)', () => {
    expect(tables.map(([name]) => name)).toEqual(expect.arrayContaining(['batches', 'batch_lines', 'webhook_endpoints', 'webhook_deliveries']));
  });

  it.each(tables)('%s matches on SQLite', (name, declared) => {
    expect(differences(declared, sqliteColumns(sqlite, name), 'sqlite')).toEqual([]);
  });

  it.each(tables)('%s matches on PostgreSQL', async (name, declared) => {
    expect(differences(declared, await postgresColumns(pg, name), 'postgres')).toEqual([]);
  });
});
