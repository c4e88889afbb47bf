#!/usr/bin/env -S node --max-semi-space-size=64
/**
 * The `switchboard` command: serve, simulate, keys (cli-keys.ts), backup (cli-backup.ts), restore (cli-restore.ts). Usage errors,
 * config errors and a secret key that does not fit the store exit with code 2 and a message naming the
 * flag, field path or key file; nothing here prints a stack trace for those. `--help` anywhere prints the
 * usage and exits 0. A relative `storage.path` is from the config file's folder,
 * a relative `--db` from the working directory.
 *
 * Each command's modules load when it runs: `simulate` or `keys list` need not load the gateway (about a
 * second of CPU for every start of the simulator and every command a script or a test runs).
 */
import { ConfigError } from './config-error.js';
import { UsageError } from './cli-flags.js';
import { UwsFallbackError } from './http/uws.js';
import type { Config } from './config.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import { StoreTooNewError } from './store/db.js';
import { SecretKeyError } from './store/secret-box.js';
import { VERSION } from './version.js';
import { WorkerStartError } from './workers/workers-launcher.js';

/** The usage of every command, for `--help` and usage errors (which load every command's module). */
async function usage(): Promise<{ all: string; own: Readonly<Record<string, string>> }> {
  const [agent, backup, config, restore, keys, users, usageCmd] = await Promise.all([
    import('./cli-agent.js'),
    import('./cli-backup.js'),
    import('./cli-config.js'),
    import('./cli-restore.js'),
    import('./cli-keys.js'),
    import('./cli-users.js'),
    import('./cli-usage.js'),
  ]);
  const all = `usage:
  switchboard serve --config FILE [--port N] [--host H] [--db PATH] [--workers N]
  switchboard simulate [--port N] [--host H] [--reasoning-models a,b]
${keys.KEYS_USAGE}
${users.USERS_USAGE}
${usageCmd.USAGE_USAGE}
${backup.BACKUP_USAGE}
${restore.RESTORE_USAGE}
${config.CONFIG_USAGE}
${agent.AGENT_USAGE}
  switchboard --help | --version`;
  // What `switchboard <command> --help` prints; commands not listed print the whole usage.
  const own = { keys: keys.KEYS_USAGE, users: users.USERS_USAGE, usage: usageCmd.USAGE_USAGE, backup: backup.BACKUP_USAGE, restore: restore.RESTORE_USAGE, config: config.CONFIG_USAGE, agent: agent.AGENT_USAGE };
  return { all, own };
}

/** The commands besides serve and simulate: each module loaded when its command runs. */
const COMMANDS: Readonly<Record<string, (argv: string[]) => Promise<void>>> = {
  keys: async (argv) => (await import('./cli-keys.js')).keysCommand(argv),
  users: async (argv) => (await import('./cli-users.js')).usersCommand(argv),
  usage: async (argv) => (await import('./cli-usage.js')).usageCommand(argv),
  backup: async (argv) => (await import('./cli-backup.js')).backupCommand(argv),
  restore: async (argv) => (await import('./cli-restore.js')).restoreCommand(argv),
  config: async (argv) => (await import('./cli-config.js')).configCommand(argv),
  agent: async (argv) => (await import('./cli-agent.js')).agentCommand(argv),
};

async function serve(argv: string[]): Promise<void> {
  const [{ z }, { parseFlags, port }, { loadConfigFile }, { startGateway }] = await Promise.all([import('zod'), import('./cli-flags.js'), import('./config.js'), import('./main.js')]);
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
  const { startWorkers } = await import('./workers/workers-launcher.js');
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
  const [{ z }, { csv, parseFlags, port }, { startSimulator }] = await Promise.all([import('zod'), import('./cli-flags.js'), import('./simulator/server.js')]);
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
    const { all, own } = await usage();
    const ownUsage = command === undefined ? undefined : own[command];
    process.stdout.write(`${ownUsage === undefined ? all : `usage:\n${ownUsage}`}\n`);
    return;
  }
  if (command === 'serve') return serve(rest);
  if (command === 'simulate') return simulate(rest);
  const run = command === undefined ? undefined : COMMANDS[command];
  if (run) return run(rest);
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${(await usage()).all}\n`);
    return;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`switchboard ${VERSION}\n`);
    return;
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}`);
}

main(process.argv.slice(2)).catch(async (err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`switchboard: ${err.message}\n${(await usage()).all}\n`);
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
