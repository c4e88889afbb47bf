/**
 * Statements of one fixed shape whose SQL is the same text on both backends (`?` placeholders, turned into
 * `$n` for PostgreSQL): prepared once per SQLite connection, and a named statement, parsed and planned once
 * per PostgreSQL connection. Unlike `prepared` (sql-program.ts) no query builder is involved: the store's
 * writer thread runs these, and importing Kysely there would cost its start ~0.3 s of CPU on every gateway.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db.js';
import { native, type QueryOutcome, type SqlProgram } from './sql-program.js';

/** `?` to PostgreSQL's `$1`, `$2`... (the texts given here hold no `?` in a literal). */
export function numberedPlaceholders(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${(n += 1)}`);
}

/** What is prepared once per SQLite connection: the statements die with it. */
export function perConnection<T>(make: (db: Db) => T): (db: Db) => T {
  const made = new WeakMap<Db, T>();
  return (db) => {
    let found = made.get(db);
    if (found === undefined) made.set(db, (found = make(db)));
    return found;
  };
}

/**
 * A statement of fixed shape as a program step. `name` must be unique among the process's named statements
 * (PostgreSQL keeps them per connection, by name).
 */
export function fixedStatement(name: string, text: string): (...values: unknown[]) => SqlProgram<QueryOutcome> {
  const statement = perConnection((db): Statement => db.prepare(text));
  const postgres = { name: `switchboard-${name}`, text: numberedPlaceholders(text) };
  return (...values) =>
    native({
      sqlite: (db): QueryOutcome => {
        const stmt = statement(db);
        if (stmt.reader) {
          const found = stmt.all(...values);
          return { rows: found, changes: found.length };
        }
        return { rows: [], changes: stmt.run(...values).changes };
      },
      postgres: async (client): Promise<QueryOutcome> => {
        const result = await client.query({ ...postgres, values });
        return { rows: result.rows, changes: result.rowCount ?? 0 };
      },
    });
}
