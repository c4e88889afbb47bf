/** PostgreSQL: webhook endpoints, events, deliveries (claimed with FOR UPDATE SKIP LOCKED), the instances registry. */
export const pgMigrationWebhooks = `
`;
