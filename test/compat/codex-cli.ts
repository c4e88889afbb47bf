/**
 * OpenAI's Codex CLI (`@openai/codex`, the npm package's Linux binary) run as a self-hosted user runs it
 * against the gateway (issue 34): a custom model provider with `wire_api = "responses"` (its only wire
 * API), a throwaway CODEX_HOME, and everything that would reach outside the machine turned off (README
 * "Codex CLI"). `codex exec` runs one task non-interactively with no sandbox and no approvals, so the
 * one command the simulated model asks for (scripted with a `[call: ...]` marker, docs/simulator.md) runs.
 *
 * The proof that nothing leaves the machine: every proxy variable points at a local trap that records
 * any connection, and only the gateway's loopback address is exempt (NO_PROXY). Codex's HTTP client
 * honours these variables, so an update check, analytics post or plugin sync would land in the trap.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CODEX = join(process.cwd(), 'node_modules/.bin/codex');

/** The config.toml the README shows, for a provider at `baseURL` whose key is in SWITCHBOARD_API_KEY. */
export function codexConfig(baseURL: string, model: string): string {
  return [
    `model = ${JSON.stringify(model)}`,
    'model_provider = "switchboard"',
    // No update check, no hosted web search (a tool the gateway's models cannot run), no analytics,
    // no plugin catalogue sync.
    'check_for_update_on_startup = false',
    'web_search = "disabled"',
    '',
    '[model_providers.switchboard]',
    'name = "Switchboard"',
    `base_url = ${JSON.stringify(baseURL)}`,
    'env_key = "SWITCHBOARD_API_KEY"',
    'wire_api = "responses"',
    // One request per model turn: a refusal surfaces at once instead of after Codex's retries.
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
  ].join('\n');
}

export interface CodexRun {
  readonly exitCode: number | null;
  /** `codex exec --json` events, one per stdout line. */
  readonly events: readonly Record<string, unknown>[];
  readonly stderr: string;
  /** Requests that tried to leave the machine (through the proxy trap). */
  readonly outbound: readonly string[];
}

/** A local HTTP proxy that answers 403 to everything and records what was asked of it. */
async function startTrap(): Promise<{ server: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on('connect', (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

export async function runCodex(options: { baseURL: string; apiKey: string; model: string; prompt: string; timeoutMs?: number }): Promise<CodexRun> {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  const work = join(home, 'work');
  mkdirSync(work);
  writeFileSync(join(home, 'config.toml'), codexConfig(options.baseURL, options.model));
  const trap = await startTrap();
  try {
    const proxy = { HTTP_PROXY: trap.url, HTTPS_PROXY: trap.url, ALL_PROXY: trap.url, http_proxy: trap.url, https_proxy: trap.url, all_proxy: trap.url, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
    const child = spawn(CODEX, ['exec', '--json', '--skip-git-repo-check', '--strict-config', '--dangerously-bypass-approvals-and-sandbox', '-C', work, options.prompt], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, SWITCHBOARD_API_KEY: options.apiKey, ...proxy },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    const exitCode = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    clearTimeout(timer);
    const events = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { exitCode, events, stderr, outbound: [...trap.seen] };
  } finally {
    await new Promise<void>((resolve) => trap.server.close(() => resolve()));
    rmSync(home, { recursive: true, force: true });
  }
}
