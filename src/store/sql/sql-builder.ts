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
  sql,
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

/**
 * `LIMIT 1` written into the statement. Kysely binds `.limit(1)` as a parameter, and SQLite runs a
 * statement whose LIMIT is a bound parameter several times slower: the per-Responses-turn subscriber check
 * took 16-20 us with `LIMIT ?` against 3-4 us with `LIMIT 1` (better-sqlite3, measured in isolation;
 * ~88 us on the loaded gateway, issue 35). A page's variable limit stays a parameter.
 */
export const LIMIT_ONE = sql.lit(1);
