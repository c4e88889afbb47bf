/**
 * A list in a WHERE as one parameter on both backends: a JSON array through json_each on SQLite, an array
 * with `= ANY` on PostgreSQL. The statement's text is the same whatever the list's length, so it can be
 * compiled once (sql-program.ts `prepared`) and no list can pass SQLite's parameter limit.
 */
import { sql, type RawBuilder } from 'kysely';
import type { SqlDialect } from './sql-program.js';

declare const listParam: unique symbol;
/** A list encoded for its dialect (`listOf`): what `oneOf` binds. */
export type ListParam<T extends string | number> = { readonly [listParam]: T };

/** The encoded list (a JS array for pg to bind, JSON text for SQLite). */
export function listOf<T extends string | number>(dialect: SqlDialect, values: readonly T[]): ListParam<T> {
  return (dialect === 'postgres' ? [...values] : JSON.stringify(values)) as unknown as ListParam<T>;
}

/** `column` is one of `list` (an empty list matches nothing), parenthesized so a NOT before it reads as meant. */
export function oneOf<T extends string | number>(dialect: SqlDialect, column: string, list: ListParam<T>, type: 'text' | 'bigint'): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`(${sql.ref(column)} = ANY(${list}::${sql.raw(type)}[]))`
    : sql<boolean>`(${sql.ref(column)} IN (SELECT value FROM json_each(${list})))`;
}
