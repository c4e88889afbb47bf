/**
 * The YAML config file: the declaration of infrastructure (server, storage, projects, workspaces,
 * endpoints, bootstrap keys). Parsed once with zod at start and frozen. Field names are a contract with
 * operators: add fields, never rename them.
 *
 * The entry the rest of the gateway imports the config through; the schema per section and the loader
 * live in src/config/ (its README lists the files).
 */
export { ENDPOINT_KINDS, ENDPOINT_STATUSES, ENDPOINT_TIERS, MODEL_CAPABILITIES, SLUG } from './config/endpoint.js';
export { REASONING_LEVELS } from './core/chat/reasoning-levels.js';
export { SCOPES, type Scope } from './core/auth/scopes.js';
export { isoTimestamp } from './config/iso-timestamp.js';
export type { DeclaredProject } from './config/project.js';
export {
  configSchema,
  REALTIME_DEFAULTS,
  type AudioConfig,
  type BudgetConfig,
  type Config,
  type EndpointConfig,
  type FilesConfig,
  type KeyConfig,
  type MediaConfig,
  type ModelConfig,
  type ProjectConfig,
  type RealtimeConfig,
  type SemanticRouterConfig,
  type TimeoutOverrides,
  type WebhooksConfig,
} from './config/schema.js';
export { ConfigError } from './config-error.js';
export { loadConfigFile, parseConfig } from './config/load-config.js';
