/**
 * A table declared once for both backends (issue 33): its columns as values, from which the row types the
 * query builder checks against are derived (TablesOf), and which test/contract/store-schema.test.ts
 * compares with the live SQLite and PostgreSQL schemas, so the two migration histories cannot drift
 * from the declaration without a failing test.
 *
 * Kinds are the storage classes both dialects share: `integer` (SQLite INTEGER; PostgreSQL integer or
 * bigint: times in milliseconds, counts, micro-dollars, all below 2^53), `text`, `real`, `boolean`
 * (SQLite 0/1, PostgreSQL boolean), `blob`, and `text_array` (PostgreSQL text[] where SQLite keeps JSON
 * text: declared per dialect with `perDialect`).
 */
import type { Generated } from 'kysely';

export type ColumnKind = 'integer' | 'text' | 'real' | 'boolean' | 'blob';

export interface Column<T, G extends boolean = false> {
  readonly kind: ColumnKind;
  readonly nullable: boolean;
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

export const nullable = <T>(c: Column<T>): Column<T | null> => ({ ...c, nullable: true });
/** A column the database fills when an insert omits it (INTEGER PRIMARY KEY / BIGSERIAL, a DEFAULT). */
export const generated = <T>(c: Column<T>): Column<T, true> => ({ ...c, generated: true });

export type TableDef = Readonly<Record<string, Column<unknown, boolean>>>;
export type SchemaDef = Readonly<Record<string, TableDef>>;

type RowOf<D extends TableDef> = { [K in keyof D]: D[K] extends Column<infer T, true> ? Generated<T> : D[K] extends Column<infer T, false> ? T : never };

/** The Kysely table types of a schema declaration. */
export type TablesOf<S extends SchemaDef> = { [T in keyof S]: RowOf<S[T]> };
