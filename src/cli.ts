#!/usr/bin/env node
/**
 * The `switchboard` command: serve, simulate, keys create. Usage errors, config errors and a secret key
 * that does not fit the store exit with code 2 and a message naming the flag, field path or key file;
 * nothing here prints a stack trace for those. A relative `storage.path` is from the config file's folder,
 * a relative `--db` from the working directory.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';
import { ConfigError, formatZodIssues, isoTimestamp, loadConfigFile, SCOPES } from './config.js';
import { createKeyFromCli } from './cli-keys.js';
import { UwsFallbackError } from './http/uws.js';
import { flushLogger, type Logger } from './log.js';
import { startGateway } from './main.js';
import { startSimulator } from './simulator/server.js';
import { SecretKeyError } from './store/secret-box.js';

const USAGE = `usage:
  switchboard serve --config FILE [--port N] [--host H] [--db PATH]
  switchboard simulate [--port N] [--host H] [--reasoning-models a,b]
  switchboard keys create --project ID --scopes a,b [--config FILE | --db PATH] [--name TEXT]
                          [--expires-at ISO8601] [--endpoint-id UUID] [--workspaces ws_a,ws_b]
                          [--allowed-ips a,b] [--blocked-ips a,b] [--quota-requests N] [--quota-window SECONDS]`;

export class UsageError extends Error {}

const port = z.coerce.number().int().min(0).max(65535);
const csv = z.string().transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean));

function parseFlags<T extends z.ZodType>(argv: string[], options: ParseArgsConfig['options'], schema: T): z.infer<T> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: argv, options: options ?? {}, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const result = schema.safeParse(values);
  if (!result.success) {
    throw new UsageError(formatZodIssues(result.error.issues).replace(/^([\w-]+):/gm, '--$1:'));
  }
  return result.data;
}

async function serve(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, db: { type: 'string' } },
    z.object({
      config: z.string({ error: 'is required: the YAML config file to serve' }),
      port: port.optional(),
      host: z.string().min(1).optional(),
      db: z.string().min(1).optional(),
    }),
  );
  const config = loadConfigFile(flags.config);
  // Handlers go in before start: the "listening" line can reach a supervisor before startGateway returns.
  const starting = startGateway({ config, port: flags.port, host: flags.host, dbPath: flags.db });
  onShutdownSignal(async () => (await starting).close());
  const gateway = await starting;
  logFatalExceptions(gateway.logger);
}

/**
 * What escapes everything else (a timer, a stream listener) still ends the process, as Node advises after
 * an unknown failure, but as a structured log line with its stack that the operator's log pipeline sees,
 * not only a trace on stderr.
 */
function logFatalExceptions(logger: Logger): void {
  process.on('uncaughtException', (err, origin) => {
    logger.fatal({ err, origin }, 'uncaught exception; exiting');
    flushLogger(logger);
    // The log destination is asynchronous; stderr to a pipe or file is written before exit.
    process.stderr.write(`switchboard: uncaught exception: ${err.stack ?? String(err)}\n`);
    process.exit(1);
  });
}

async function simulate(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { port: { type: 'string' }, host: { type: 'string' }, 'reasoning-models': { type: 'string' } },
    z.object({ port: port.default(9100), host: z.string().min(1).default('127.0.0.1'), 'reasoning-models': csv.optional() }),
  );
  const starting = startSimulator({ host: flags.host, port: flags.port, reasoningModels: flags['reasoning-models'] ?? [] });
  onShutdownSignal(async () => (await starting).close());
  const sim = await starting;
  process.stdout.write(`simulator listening on ${sim.url}\n`);
}

async function keys(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub !== 'create') throw new UsageError(`unknown keys command ${JSON.stringify(sub ?? '')}: only "keys create" exists`);
  const flags = parseFlags(
    rest,
    Object.fromEntries(
      ['project', 'scopes', 'config', 'db', 'name', 'expires-at', 'endpoint-id', 'workspaces', 'allowed-ips', 'blocked-ips', 'quota-requests', 'quota-window'].map(
        (f) => [f, { type: 'string' as const }],
      ),
    ),
    z.object({
      project: z.string({ error: 'is required: the project id (proj_...)' }),
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
  if (!flags.config && !flags.db) throw new UsageError('--config or --db is required: the store to write the key into');
  const config = flags.config ? loadConfigFile(flags.config) : null;
  // --db is from the working directory, like any path on a command line; storage.path is already resolved
  // from the config file's folder (config.ts), so both name the store the gateway serves.
  const store = flags.db !== undefined ? { path: flags.db, from: '--db' } : { path: config?.storage.path ?? '', from: `storage.path in ${flags.config ?? ''}` };
  const created = createKeyFromCli(config, store, {
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

/** SIGTERM/SIGINT drain in-flight work and close the store; a second signal exits at once. */
function onShutdownSignal(close: () => Promise<void>): void {
  let stopping = false;
  const stop = (): void => {
    if (stopping) process.exit(1);
    stopping = true;
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve(rest);
  if (command === 'simulate') return simulate(rest);
  if (command === 'keys') return keys(rest);
  if (command === undefined || command === '--help' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`switchboard: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  // The operator must fix these before a start can succeed: a supervisor should not just restart.
  if (err instanceof ConfigError || err instanceof UwsFallbackError || err instanceof SecretKeyError) {
    process.stderr.write(`switchboard: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`switchboard: ${(err as Error).message ?? String(err)}\n`);
  process.exit(1);
});
