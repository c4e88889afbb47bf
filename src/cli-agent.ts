/**
 * `switchboard agent`: the reference execution agent (docs/exec.md "Reference agent", src/agent/). Keys
 * may come from the environment (SWITCHBOARD_JOIN_KEY, SWITCHBOARD_AGENT_KEY) rather than flags, which
 * other users of the host can read in the process list. The agent key a join-key enrollment returns is
 * written to the key file (mode 0600; default: the manifest's path + `.agent-key`) and used from then on,
 * in this run's reconnects and at the next start, so restarting the same command reconnects as the same
 * agent instead of colliding with its own name (agent_name_conflict). The key itself is never printed.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { enrollMessage, loadAgentManifest, ManifestFileError } from './agent/agent-manifest.js';
import { startAgentClient } from './agent/agent-client.js';
import { parseFlags, UsageError } from './cli-flags.js';
import { credentialKind } from './exec/agents/credentials.js';

export const AGENT_USAGE = `  switchboard agent --url WS_URL (--join-key KEY | --agent-key KEY) --manifest tools.yaml [--name NAME] [--key-file PATH]
                    (WS_URL: ws[s]://HOST/{project}/v1/exec/agents/connect; keys also from SWITCHBOARD_JOIN_KEY / SWITCHBOARD_AGENT_KEY)`;

const keyFlag = (kind: 'join_key' | 'agent_key', shape: string) =>
  z.string().refine((v) => credentialKind(v) === kind, `must be ${shape} followed by 43 base64url characters`);

export async function agentCommand(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { url: { type: 'string' }, 'join-key': { type: 'string' }, 'agent-key': { type: 'string' }, manifest: { type: 'string' }, name: { type: 'string' }, 'key-file': { type: 'string' } },
    z.object({
      url: z.string({ error: 'is required: ws[s]://HOST/{project}/v1/exec/agents/connect' }).regex(/^wss?:\/\//, 'must be a ws:// or wss:// URL'),
      'join-key': keyFlag('join_key', 'sjk_').optional(),
      'agent-key': keyFlag('agent_key', 'sak_').optional(),
      manifest: z.string({ error: 'is required: the YAML file of the tools' }),
      name: z.string().min(1).optional(),
      'key-file': z.string().min(1).optional(),
    }),
  );
  const keyFile = flags['key-file'] ?? `${flags.manifest}.agent-key`;
  const joinKey = flags['join-key'] ?? envKey('SWITCHBOARD_JOIN_KEY', 'join_key');
  const agentKey = flags['agent-key'] ?? envKey('SWITCHBOARD_AGENT_KEY', 'agent_key') ?? storedKey(keyFile);
  if (!joinKey && !agentKey) throw new UsageError(`--join-key or --agent-key is required (no agent key is stored in ${keyFile} yet)`);

  let enroll: Record<string, unknown>;
  let manifest;
  try {
    manifest = loadAgentManifest(flags.manifest);
    enroll = enrollMessage(manifest, flags.name ?? manifest.name ?? hostname());
  } catch (err) {
    if (err instanceof ManifestFileError) throw new UsageError(`--manifest: ${err.message}`);
    throw err;
  }
  const log = (line: string): void => void process.stdout.write(`agent: ${line}\n`);
  const client = startAgentClient({
    url: flags.url,
    manifest,
    enroll,
    agentKey: agentKey ?? null,
    joinKey: joinKey ?? null,
    storeAgentKey(key) {
      writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
      chmodSync(keyFile, 0o600);
      log(`agent key stored in ${keyFile}`);
    },
    log,
    fatal(message) {
      process.stderr.write(`switchboard agent: ${message}\n`);
      void client.stop().then(() => process.exit(1));
    },
  });
  const stop = (): void => void client.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

function envKey(name: string, kind: 'join_key' | 'agent_key'): string | undefined {
  const value = process.env[name]?.trim();
  if (!value) return undefined;
  if (credentialKind(value) !== kind) throw new UsageError(`${name} does not hold ${kind === 'join_key' ? 'a join key (sjk_...)' : 'an agent key (sak_...)'}`);
  return value;
}

function storedKey(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const value = readFileSync(path, 'utf8').trim();
  if (credentialKind(value) !== 'agent_key') throw new UsageError(`${path} does not hold an agent key (sak_...); delete it to enroll again with a join key`);
  return value;
}
