/** Reading the config file: YAML to the parsed, path-resolved and frozen Config. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../config-error.js';
import { formatZodIssues } from '../core/zod-issue-lines.js';
import { configSchema, type Config } from './schema.js';

/**
 * `baseDir`: the folder relative paths in the file (storage.path, server.tls files) are taken from;
 * loadConfigFile passes the file's own. Without it they are left as written (the working directory).
 */
export function parseConfig(raw: unknown, source = 'config', baseDir?: string): Config {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(`${source} is invalid:\n${formatZodIssues(result.error.issues)}`);
  const config = result.data;
  if (baseDir !== undefined) {
    if (config.storage.path !== ':memory:') config.storage.path = resolve(baseDir, config.storage.path);
    const { tls } = config.server;
    if (tls) config.server.tls = { cert_file: resolve(baseDir, tls.cert_file), key_file: resolve(baseDir, tls.key_file) };
  }
  return deepFreeze(config);
}

export function loadConfigFile(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid YAML: ${(err as Error).message}`);
  }
  // From the file's folder, not the working directory: `keys create --config FILE` run from another folder
  // used to mint into a new, empty database the gateway never read (issue 19, defect 9).
  return parseConfig(raw, file, dirname(resolve(file)));
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
