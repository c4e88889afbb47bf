/**
 * The query builders: Kysely with a dialect's adapter and compiler and a driver that cannot execute, so a
 * program can only compile its queries and hand them to its runner (sql-program.ts). One builder per
 * dialect and table set; building one costs nothing at run time.
 */
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type Dialect,
} from 'kysely';
import type { Sql, SqlDialect } from './sql-program.js';

const DIALECTS: Record<SqlDialect, Dialect> = {
  sqlite: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
  postgres: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
};

export function sqlFor<Tables>(dialect: SqlDialect): Sql<Tables> {
  return { dialect, db: new Kysely<Tables>({ dialect: DIALECTS[dialect] }) };
}
