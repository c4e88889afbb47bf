/** PostgreSQL: router settings and rules, workspace routing, decisions, SLOs, model aliases. */
export const pgMigrationRouter = `
`;
