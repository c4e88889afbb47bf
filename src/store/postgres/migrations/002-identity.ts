/** PostgreSQL: dashboard sign-in: sessions and what the sign-in keeps beside the users of 001. */
export const pgMigrationIdentity = `
`;
