/**
 * A table declared once for both backends (issue 33): its columns as values, from which the row types the
 * query builder checks against are derived (TablesOf), and which test/contract/store-schema.test.ts
 * compares with the live SQLite and PostgreSQL schemas, so the two migration histories cannot drift
 * from the declaration without a failing test.
 *
 * Kinds are the storage classes both dialects share: `integer` (SQLite INTEGER; PostgreSQL integer or
 * bigint: times in milliseconds, counts, micro-dollars, all below 2^53), `text`, `real`, `boolean`
 * (SQLite 0/1, PostgreSQL boolean), `blob`; and two kinds each dialect stores its own way, `text_array`
 * (PostgreSQL text[], SQLite JSON text) and `json` (PostgreSQL jsonb, SQLite JSON text), whose values a
 * program writes and reads only through `storedIn` below: the one place that difference is spelled out.
 */
import type { Generated } from 'kysely';
import type { SqlDialect } from './sql-program.js';

export type ColumnKind = 'integer' | 'text' | 'real' | 'boolean' | 'blob' | 'text_array' | 'json';

export interface Column<T, G extends boolean = false> {
  readonly kind: ColumnKind;
  readonly nullable: boolean;
  /** Set when only that backend's table has the column (the other never reads or writes it). */
  readonly onlyIn?: SqlDialect;
  /** Filled by the database when an insert omits it (a sequence, a default). */
  readonly generated: G;
  /** Type only: what the column reads back as. */
  readonly _type?: T;
}

const column = <T>(kind: ColumnKind): Column<T> => ({ kind, nullable: false, generated: false });

export const integer = (): Column<number> => column('integer');
export const real = (): Column<number> => column('real');
export const text = <T extends string = string>(): Column<T> => column<T>('text');
export const boolean = (): Column<boolean> => column('boolean');
export const blob = (): Column<Buffer> => column('blob');

declare const storedValue: unique symbol;
/** A `text_array` or `json` value in its dialect's stored form: made and read only by `storedIn`. */
export type Stored<T> = { readonly [storedValue]: T };

export const textArray = <T extends string = string>(): Column<Stored<T[]>> => column('text_array');
export const json = <T>(): Column<Stored<T>> => column('json');

/**
 * The stored forms of `text_array` and `json` values. PostgreSQL binds a JS array as text[] and parses
 * text[] and jsonb when reading; a json value is bound as its text (pg would bind an array as text[]).
 * SQLite keeps both as JSON text.
 */
export function storedIn(dialect: SqlDialect) {
  const as = <T>(value: unknown): Stored<T> => value as Stored<T>;
  return {
    textArray: <T extends string>(value: readonly T[]): Stored<T[]> => as<T[]>(dialect === 'postgres' ? [...value] : JSON.stringify(value)),
    json: <T>(value: T): Stored<T> => as<T>(JSON.stringify(value)),
    read: <T>(value: Stored<T>): T => (dialect === 'postgres' ? (value as unknown as T) : (JSON.parse(value as unknown as string) as T)),
  };
}

export const nullable = <T>(c: Column<T>): Column<T | null> => ({ ...c, nullable: true });

/** Unix milliseconds, as every table stores its times. */
export const time = integer;
export const maybeText = (): Column<string | null> => nullable(text());
export const maybeTime = (): Column<number | null> => nullable(integer());
/** A column the database fills when an insert omits it (INTEGER PRIMARY KEY / BIGSERIAL, a DEFAULT). */
export const generated = <T>(c: Column<T>): Column<T, true> => ({ ...c, generated: true });
/** A column of one backend's table only: PostgreSQL's insertion sequence where SQLite has its rowid. */
export const onlyIn = <T, G extends boolean>(dialect: SqlDialect, c: Column<T, G>): Column<T, G> => ({ ...c, onlyIn: dialect });

export type TableDef = Readonly<Record<string, Column<unknown, boolean>>>;
export type SchemaDef = Readonly<Record<string, TableDef>>;

type RowOf<D extends TableDef> = { [K in keyof D]: D[K] extends Column<infer T, true> ? Generated<T> : D[K] extends Column<infer T, false> ? T : never };

/** The Kysely table types of a schema declaration. */
export type TablesOf<S extends SchemaDef> = { [T in keyof S]: RowOf<S[T]> };

/** For the stores that only ask which instances are alive (the registry owns the table: store/instances/instances-tables.ts). */
export type GatewayInstancesRead = { gateway_instances: { id: string } };
