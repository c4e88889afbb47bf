/** PostgreSQL: the usage ledger, its spend rollup, stored budgets. */
export const pgMigrationUsage = `
`;
