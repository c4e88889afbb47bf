/**
 * The PostgreSQL migrations, in the order they apply. Each is named, and the names applied are kept in
 * `switchboard_migrations`: a new migration is appended, never inserted or edited once released.
 */
export interface PgMigration {
  readonly name: string;
  readonly sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [];
