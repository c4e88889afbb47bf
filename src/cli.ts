#!/usr/bin/env node
/**
 * The `switchboard` command: serve, simulate, keys (cli-keys.ts), backup (cli-backup.ts), restore (cli-restore.ts). Usage errors,
 * config errors and a secret key that does not fit the store exit with code 2 and a message naming the
 * flag, field path or key file; nothing here prints a stack trace for those. `--help` anywhere prints the
 * usage and exits 0. A relative `storage.path` is from the config file's folder,
 * a relative `--db` from the working directory.
 */
import { z } from 'zod';
import { ConfigError, loadConfigFile, type Config } from './config.js';
import { AGENT_USAGE, agentCommand } from './cli-agent.js';
import { BACKUP_USAGE, backupCommand } from './cli-backup.js';
import { CONFIG_USAGE, configCommand } from './cli-config.js';
import { RESTORE_USAGE, restoreCommand } from './cli-restore.js';
import { csv, parseFlags, port, UsageError } from './cli-flags.js';
import { KEYS_USAGE, keysCommand } from './cli-keys.js';
import { USERS_USAGE, usersCommand } from './cli-users.js';
import { USAGE_USAGE, usageCommand } from './cli-usage.js';
import { UwsFallbackError } from './http/uws.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import { startGateway } from './main.js';
import { startSimulator } from './simulator/server.js';
import { StoreTooNewError } from './store/db.js';
import { SecretKeyError } from './store/secret-box.js';
import { VERSION } from './version.js';
import { startWorkers, WorkerStartError } from './workers/workers-launcher.js';

const USAGE = `usage:
  switchboard serve --config FILE [--port N] [--host H] [--db PATH] [--workers N]
  switchboard simulate [--port N] [--host H] [--reasoning-models a,b]
${KEYS_USAGE}
${USERS_USAGE}
${USAGE_USAGE}
${BACKUP_USAGE}
${RESTORE_USAGE}
${CONFIG_USAGE}
${AGENT_USAGE}
  switchboard --help | --version`;

/** What `switchboard <command> --help` prints; commands not listed print the whole usage. */
const COMMAND_USAGE: Readonly<Record<string, string>> = { keys: KEYS_USAGE, users: USERS_USAGE, usage: USAGE_USAGE, backup: BACKUP_USAGE, restore: RESTORE_USAGE, config: CONFIG_USAGE, agent: AGENT_USAGE };

async function serve(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, db: { type: 'string' }, workers: { type: 'string' } },
    z.object({
      config: z.string({ error: 'is required: the YAML config file to serve' }),
      port: port.optional(),
      host: z.string().min(1).optional(),
      db: z.string().min(1).optional(),
      workers: z.coerce.number().int().min(1).max(64).optional(),
    }),
  );
  const config = loadConfigFile(flags.config);
  const workers = flags.workers ?? config.server.workers;
  // One worker is today's single-threaded gateway on the main thread: no worker thread at all.
  if (workers > 1) return serveOnWorkers(config, workers, flags);
  // Handlers go in before start: the "listening" line can reach a supervisor before startGateway returns.
  const starting = startGateway({ config, port: flags.port, host: flags.host, dbPath: flags.db });
  onShutdownSignal(async () => (await starting).close());
  const gateway = await starting;
  logFatalExceptions(gateway.logger);
}

/** `serve --workers N` (src/workers/): the main thread supervises N gateway threads on one port. */
async function serveOnWorkers(config: Config, workers: number, flags: { port?: number | undefined; host?: string | undefined; db?: string | undefined }): Promise<void> {
  const logger = createLogger(config.server.log_level);
  const starting = startWorkers({ config, workers, port: flags.port, host: flags.host, dbPath: flags.db, logger });
  onShutdownSignal(async () => (await starting).stop());
  const running = await starting;
  logFatalExceptions(logger);
  void running.gaveUp.then((code) => process.exit(code));
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
  if (rest.includes('--help') || rest.includes('-h')) {
    const own = command === undefined ? undefined : COMMAND_USAGE[command];
    process.stdout.write(`${own === undefined ? USAGE : `usage:\n${own}`}\n`);
    return;
  }
  if (command === 'serve') return serve(rest);
  if (command === 'simulate') return simulate(rest);
  if (command === 'keys') return keysCommand(rest);
  if (command === 'users') return usersCommand(rest);
  if (command === 'usage') return usageCommand(rest);
  if (command === 'backup') return backupCommand(rest);
  if (command === 'restore') return restoreCommand(rest);
  if (command === 'config') return configCommand(rest);
  if (command === 'agent') return agentCommand(rest);
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`switchboard ${VERSION}\n`);
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
  if (err instanceof ConfigError || err instanceof UwsFallbackError || err instanceof SecretKeyError || err instanceof StoreTooNewError) {
    process.stderr.write(`switchboard: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof WorkerStartError) {
    process.stderr.write(`switchboard: a worker failed to start: ${err.message}\n`);
    process.exit(err.exitCode);
  }
  process.stderr.write(`switchboard: ${(err as Error).message ?? String(err)}\n`);
  process.exit(1);
});
