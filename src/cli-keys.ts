/**
 * `switchboard keys ...`: create, generate, list, revoke, rotate, against the store a gateway serves (a
 * running one notices the change within a second, store/catalog.ts). The rules are the management API's:
 * creation through core/auth/key-request.ts, the key's wire form, status and the 24 h rotation grace from
 * routes/management-keys.ts, the SQL from store/catalog/; only the wording names flags. Refusals the
 * operator must fix (an unknown key, a store that does not exist) are ConfigErrors: exit 2.
 */
import { z } from 'zod';
import { ConfigError, isoTimestamp, loadConfigFile, SCOPES, SLUG, type Config } from './config.js';
import { csv, parseCommandLine, parseFlags, UsageError } from './cli-flags.js';
import { createKeyFromCli, listKeys, revokeKey, rotateKey, type CliStore, type WireKey } from './cli-keys-store.js';
import { isWellFormedKey, mintKeyValue } from './core/auth/key-token.js';

export const KEYS_USAGE = `  switchboard keys create --project ID --scopes a,b [--config FILE | --db PATH] [--name TEXT]
                          [--expires-at ISO8601] [--endpoint-id UUID] [--workspaces ws_a,ws_b]
                          [--allowed-ips a,b] [--blocked-ips a,b] [--quota-requests N] [--quota-window SECONDS]
  switchboard keys generate --project-slug SLUG | --project ID --config FILE
  switchboard keys list --project ID (--config FILE | --db PATH) [--json]
  switchboard keys revoke KEY_ID --project ID (--config FILE | --db PATH)
  switchboard keys rotate KEY_ID --project ID (--config FILE | --db PATH)`;

const KEY_COMMANDS = ['create', 'generate', 'list', 'revoke', 'rotate'] as const;

export async function keysCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`usage:\n${KEYS_USAGE}\n`);
    return;
  }
  switch (sub) {
    case 'create':
      return create(rest);
    case 'generate':
      return generate(rest);
    case 'list':
      return list(rest);
    case 'revoke':
    case 'rotate':
      return change(sub, rest);
    default:
      throw new UsageError(`unknown keys command ${JSON.stringify(sub ?? '')}: one of ${KEY_COMMANDS.join(', ')}`);
  }
}

const STORE_FLAGS = { project: { type: 'string' }, config: { type: 'string' }, db: { type: 'string' } } as const;
const projectFlag = z.string({ error: 'is required: the project id (proj_...)' });

/** `--db` is from the working directory, like any path on a command line; storage.path is already from the config file's folder. */
export function storeOf(flags: { config?: string | undefined; db?: string | undefined }, verb: string): { config: Config | null; store: CliStore } {
  if (!flags.config && !flags.db) throw new UsageError(`--config or --db is required: the store to ${verb}`);
  const config = flags.config ? loadConfigFile(flags.config) : null;
  const store = flags.db !== undefined ? { path: flags.db, from: '--db' } : { path: config?.storage.path ?? '', from: `storage.path in ${flags.config ?? ''}` };
  // Keys then live in PostgreSQL (cli-keys-store.ts), not in the file.
  const url = config?.storage.kind === 'postgres' ? config.storage.url : undefined;
  return { config, store: url === undefined ? store : { ...store, postgres: { url, from: `storage.url in ${flags.config ?? ''}` } } };
}

async function create(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    Object.fromEntries(
      ['project', 'scopes', 'config', 'db', 'name', 'expires-at', 'endpoint-id', 'workspaces', 'allowed-ips', 'blocked-ips', 'quota-requests', 'quota-window'].map(
        (f) => [f, { type: 'string' as const }],
      ),
    ),
    z.object({
      project: projectFlag,
      scopes: csv.pipe(z.array(z.enum(SCOPES)).min(1, 'needs at least one scope')),
      config: z.string().optional(),
      db: z.string().optional(),
      name: z.string().optional(),
      'expires-at': isoTimestamp.optional(),
      'endpoint-id': z.string().optional(),
      workspaces: csv.pipe(z.array(z.string().regex(/^ws_[0-9a-f]+$/, 'must be ws_<hex>')).min(1)).optional(),
      'allowed-ips': csv.optional(),
      'blocked-ips': csv.optional(),
      'quota-requests': z.coerce.number().int().min(0).optional(),
      'quota-window': z.coerce.number().int().positive().optional(),
    }),
  );
  const { config, store } = storeOf(flags, 'write the key into');
  const created = await createKeyFromCli(config, store, {
    projectId: flags.project,
    scopes: flags.scopes,
    name: flags.name ?? null,
    expiresAt: flags['expires-at'] ? Date.parse(flags['expires-at']) : null,
    endpointId: flags['endpoint-id'] ?? null,
    allowedWorkspaceIds: flags.workspaces ?? null,
    allowedIps: flags['allowed-ips'] ?? [],
    blockedIps: flags['blocked-ips'] ?? [],
    quotaRequests: flags['quota-requests'] ?? 0,
    quotaWindow: flags['quota-window'] ?? 60,
  });
  process.stderr.write(`created key ${created.id} (${created.scopes.join(', ')}) in ${created.projectId}; the value is shown once:\n`);
  process.stdout.write(`${created.value}\n`);
}

/**
 * A fresh bootstrap key value for the config file's `keys:` list. Nothing is stored: the gateway stores
 * its SHA-256 when it syncs the file.
 */
async function generate(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { 'project-slug': { type: 'string' }, project: { type: 'string' }, config: { type: 'string' } },
    z.object({
      'project-slug': z.string().regex(SLUG, 'must be a project slug: lowercase letters, digits and dashes, at most 40').optional(),
      project: z.string().optional(),
      config: z.string().optional(),
    }),
  );
  let slug = flags['project-slug'];
  if (slug === undefined) {
    if (!flags.project || !flags.config) throw new UsageError('--project-slug, or --project with --config, is required: the slug the value starts with');
    const config = loadConfigFile(flags.config);
    const project = config.projects.find((p) => p.id === flags.project);
    if (!project) throw new ConfigError(`--project: ${flags.config} declares no project ${flags.project}`);
    slug = project.slug;
  } else if (flags.project !== undefined || flags.config !== undefined) {
    throw new UsageError('--project-slug cannot be combined with --project or --config');
  }
  const value = mintKeyValue(slug);
  // The pattern the config file checks bootstrap keys against: what is printed must be accepted there.
  if (!isWellFormedKey(value)) throw new ConfigError(`--project-slug: ${slug} does not make a valid key value`);
  process.stderr.write(`a new key value for the project with slug ${slug}; add it under the project's keys: in the config file (only its SHA-256 is stored):\n`);
  process.stdout.write(`${value}\n`);
}

async function list(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { ...STORE_FLAGS, json: { type: 'boolean' } },
    z.object({ project: projectFlag, config: z.string().optional(), db: z.string().optional(), json: z.boolean().optional() }),
  );
  const { store } = storeOf(flags, 'read the keys from');
  const now = Date.now();
  const keys = await listKeys(store, flags.project, now);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ object: 'list', data: keys }, null, 2)}\n`);
    return;
  }
  process.stdout.write(`${keyTable(keys)}\n`);
}

const iso = (seconds: number | null): string => (seconds === null ? '-' : new Date(seconds * 1000).toISOString().replace('.000Z', 'Z'));

/** One line per key, aligned; never a value (only the prefix the API shows). */
function keyTable(keys: readonly WireKey[]): string {
  const rows = [
    ['ID', 'PREFIX', 'STATUS', 'SCOPES', 'SOURCE', 'CREATED', 'EXPIRES', 'OLD VALUE UNTIL', 'NAME'],
    ...keys.map((k) => [k.id, k.prefix, k.status, k.scopes.join(','), k.source, iso(k.created_at), iso(k.expires_at), iso(k.previous_value_valid_until), k.name ?? '']),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

async function change(verb: 'revoke' | 'rotate', argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommandLine(
    argv,
    STORE_FLAGS,
    z.object({ project: projectFlag, config: z.string().optional(), db: z.string().optional() }),
    1,
    `key id (switchboard keys ${verb} KEY_ID ...)`,
  );
  const keyId = positionals[0] ?? '';
  const { store } = storeOf(flags, `${verb} the key in`);
  const now = Date.now();
  if (verb === 'revoke') {
    const { key, changed } = await revokeKey(store, flags.project, keyId, now);
    process.stdout.write(
      changed ? `revoked ${key.id} (${key.prefix}...) in ${flags.project}: it gets 401 key_revoked from now on\n` : `${key.id} was already revoked (at ${iso(key.revoked_at)}); nothing changed\n`,
    );
    return;
  }
  const { key, value } = await rotateKey(store, flags.project, keyId, now);
  process.stderr.write(
    `rotated ${key.id} in ${flags.project}: the previous value works until ${iso(key.previous_value_valid_until)}; the new value is shown once:\n`,
  );
  process.stdout.write(`${value}\n`);
}
