/**
 * A subquery's rows as one JSON array column, so a read and its child rows are one statement (one round
 * trip on PostgreSQL). The aggregate functions differ by dialect (json_group_array against json_agg), and
 * what comes back too: SQLite returns the JSON text, pg parses it. Nested values read back as JSON has them:
 * numbers (PostgreSQL BIGINT included) and strings.
 */
import type { RawBuilder, SelectQueryBuilder } from 'kysely';
import { jsonArrayFrom as postgresJsonArray } from 'kysely/helpers/postgres';
import { jsonArrayFrom as sqliteJsonArray } from 'kysely/helpers/sqlite';
import type { SqlDialect } from './sql-program.js';

export function jsonRowsFrom<DB, TB extends keyof DB, O>(dialect: SqlDialect, subquery: SelectQueryBuilder<DB, TB, O>): RawBuilder<unknown> {
  return dialect === 'postgres' ? postgresJsonArray(subquery) : sqliteJsonArray(subquery);
}

/** The rows of a jsonRowsFrom column, on either backend. */
export function parsedJsonRows<R>(value: unknown): R[] {
  const rows: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(rows) ? (rows as R[]) : [];
}
