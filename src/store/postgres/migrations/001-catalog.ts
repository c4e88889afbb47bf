/** PostgreSQL: projects, workspaces, endpoints, API keys, dashboard users and their project roles (the key credential joins its owner). */
export const pgMigrationCatalog = `
`;
