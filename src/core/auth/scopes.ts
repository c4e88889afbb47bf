/** The scopes an API key can hold (SPEC Authentication 2); the config file, the key routes and the dashboard list these. */
export const SCOPES = ['inference', 'management', 'execution', 'research'] as const;

export type Scope = (typeof SCOPES)[number];
