/**
 * pino's levels: what `server.log_level` (config/infrastructure.ts) and SWITCHBOARD_LOG_LEVEL (log.ts) may
 * name. A leaf, so that the config schema and the logger check against one list.
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const isLogLevel = (value: string): value is LogLevel => (LOG_LEVELS as readonly string[]).includes(value);
