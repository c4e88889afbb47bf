/**
 * `switchboard config check FILE`: the config validated as `serve` validates it (a bad field exits 2 with
 * its path, from cli.ts), then every upstream server's models route tried with its key
 * (upstream/config-check.ts): one line per server, exit 0 when all are OK and 1 otherwise. A `WARN` line
 * first for each `security.allowed_targets` entry that admits everything or the cloud metadata address.
 */
import { z } from 'zod';
import { parseCommandLine, UsageError } from './cli-flags.js';
import { loadConfigFile } from './config.js';
import { allowedTargetsWarnings } from './core/net/address-policy.js';
import { checkUpstreams } from './upstream/config-check.js';

export const CONFIG_USAGE = '  switchboard config check (--config FILE | FILE) [--timeout-ms N]   # validate, then GET /models on every upstream server';

export async function configCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub !== 'check') throw new UsageError(`unknown config command ${JSON.stringify(sub ?? '')}: only "config check --config FILE" exists`);
  // --config as every other command takes it; the file alone (the older form) is still accepted.
  const named = rest.some((a) => a === '--config' || a.startsWith('--config='));
  const { flags, positionals } = parseCommandLine(
    rest,
    { 'timeout-ms': { type: 'string' }, config: { type: 'string' } },
    z.object({ 'timeout-ms': z.coerce.number().int().min(100).max(60_000).optional(), config: z.string().min(1).optional() }),
    named ? 0 : 1,
    'config file (--config FILE)',
  );
  const config = loadConfigFile(flags.config ?? positionals[0] ?? '');
  // Valid, but worth a word before anything else (issue 31); they do not change the exit status.
  for (const warning of allowedTargetsWarnings(config.security.allowed_targets)) process.stdout.write(`WARN ${warning}\n`);
  const ok = await checkUpstreams(config, { timeoutMs: flags['timeout-ms'] });
  if (!ok) process.exitCode = 1;
}
