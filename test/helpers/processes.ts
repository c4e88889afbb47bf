/**
 * Real processes for API tests: the simulator and the gateway started through the compiled CLI on free
 * ports, each gateway with its own temporary SQLite file. Nothing here mocks our own modules.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort as freePortOn } from '../../src/workers/free-port.js';
import { trackChild } from './child-registry.js';

export const CLI = join(process.cwd(), 'dist/src/cli.js');

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-test-'));
}

/** A port nothing listens on now, on 127.0.0.1 (for a server that must bind by number). */
export const freePort = (): Promise<number> => freePortOn('127.0.0.1');

export function mintTestKey(slug: string): string {
  return `svc_${slug}_${randomBytes(32).toString('base64url')}`;
}

export interface Spawned {
  readonly proc: ChildProcess;
  readonly stdout: string[];
  readonly stderr: string[];
  /** Sends the signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * For an assertion's message: how a process ended and the tail of what it printed, so a stop that ends
 * in a signal (SIGABRT: Node's fatal-error report is on stderr) or a non-zero status can be diagnosed from
 * the CI log alone, e.g. `expect(status, exitReport(gw, status)).toBe(0)`.
 */
export function exitReport(p: Pick<Spawned, 'stdout' | 'stderr'>, status: number | string, chars = 4_000): string {
  const tail = (chunks: string[]): string => {
    const text = chunks.join('');
    return text.length > chars ? `...${text.slice(-chars)}` : text;
  };
  return `the process ended with ${typeof status === 'number' ? `status ${status}` : status}\n--- stderr (tail) ---\n${tail(p.stderr)}\n--- stdout (tail) ---\n${tail(p.stdout)}`;
}

/** The scrape token of configs that name SCRAPE_TOKEN_ENV (configs.ts `scrapeToken`): /metrics and /readyz's detail. */
export const TEST_SCRAPE_TOKEN = 'test-scrape-token-0123456789';

/**
 * Every process a test starts may serve the `testing:` hooks its config turns on (the controllable clock is
 * on in testConfig): SWITCHBOARD_TESTING=1 unless the caller's `env` says otherwise. It also holds the
 * scrape token a config may name (`server.metrics.token_env: SWITCHBOARD_TEST_SCRAPE_TOKEN`).
 */
function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string, nodeFlags: readonly string[] = []): Spawned {
  const proc = trackChild(spawn(process.execPath, [...nodeFlags, CLI, ...args], { env: { ...process.env, SWITCHBOARD_TESTING: '1', SWITCHBOARD_TEST_SCRAPE_TOKEN: TEST_SCRAPE_TOKEN, ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd }));
  const stdout: string[] = [];
  const stderr: string[] = [];
  proc.stdout?.on('data', (d: Buffer) => stdout.push(d.toString()));
  proc.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig ?? 'unknown')));
  return {
    proc,
    stdout,
    stderr,
    stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/**
 * Resolves with the first stdout match, or rejects with what the process printed if it exits first or
 * is not ready in time (then it is killed).
 */
function waitForOutput(p: Spawned, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const m = p.stdout.join('').match(pattern);
      if (m) {
        cleanup();
        resolve(m);
      }
      return Boolean(m);
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`process exited before ready:\n${p.stdout.join('')}\n${p.stderr.join('')}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      // Killed, not left behind: nobody holds it to stop it, and an orphaned gateway keeps a core busy.
      p.proc.kill('SIGKILL');
      reject(new Error(`process not ready after ${timeoutMs} ms:\n${p.stdout.join('')}\n${p.stderr.join('')}`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      p.proc.stdout?.off('data', check);
      p.proc.off('exit', onExit);
    };
    p.proc.stdout?.on('data', check);
    p.proc.on('exit', onExit);
    check();
  });
}

export interface SimulatorProcess extends Spawned {
  readonly url: string;
}

export async function startSimulatorProcess(args: string[] = []): Promise<SimulatorProcess> {
  const p = spawnCli(['simulate', '--port', '0', ...args]);
  const m = await waitForOutput(p, /simulator listening on (\S+)/);
  return { ...p, url: m[1] ?? '' };
}

export interface GatewayProcess extends Spawned {
  readonly url: string;
  readonly configPath: string;
  readonly dbPath: string;
}

export interface GatewayStart {
  readonly dir?: string;
  /** null: no --db flag, the config's storage.path decides (dbPath is then read from the start-up log). */
  readonly dbPath?: string | null;
  readonly extraArgs?: string[];
  readonly env?: NodeJS.ProcessEnv;
  /** The process's working directory (default: this one). */
  readonly cwd?: string;
  /** Flags for node itself (V8 flags such as --log-maps), before the CLI's path. */
  readonly nodeFlags?: readonly string[];
}

export function writeConfig(dir: string, config: unknown): string {
  const path = join(dir, `config-${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

export async function startGatewayProcess(config: unknown, opts: GatewayStart = {}): Promise<GatewayProcess> {
  const dir = opts.dir ?? tempDir();
  const configPath = writeConfig(dir, config);
  const dbFlag = opts.dbPath === null ? [] : ['--db', opts.dbPath ?? join(dir, 'switchboard.db')];
  const p = spawnCli(['serve', '--config', configPath, '--port', '0', ...dbFlag, ...(opts.extraArgs ?? [])], opts.env, opts.cwd, opts.nodeFlags);
  const m = await waitForOutput(p, /"url":"([^"]+)"[^\n]*"msg":"switchboard listening"/);
  const synced = p.stdout.join('').match(/"db":"([^"]+)"[^\n]*"msg":"config synced into the store"/);
  return { ...p, url: m[1] ?? '', configPath, dbPath: dbFlag[1] ?? synced?.[1] ?? '' };
}

/**
 * `serve` that is expected to refuse to start: resolves with its exit code and output. One that starts
 * listening instead is stopped at once (and so exits 0), so a regression fails the test, not the run.
 */
export function serveUntilExit(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const p = spawnCli(['serve', '--port', '0', ...args], env);
  p.proc.stdout?.on('data', () => {
    if (p.stdout.join('').includes('"msg":"switchboard listening"')) void p.stop();
  });
  return new Promise((resolve) => {
    p.proc.on('close', (code) => resolve({ code, stdout: p.stdout.join(''), stderr: p.stderr.join('') }));
  });
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<CliResult> {
  const p = spawnCli(args, env, cwd);
  return new Promise((resolve) => {
    p.proc.on('close', (code) => resolve({ code, stdout: p.stdout.join(''), stderr: p.stderr.join('') }));
  });
}

/**
 * One replica of a multi-process test: a gateway on `config` (whose storage names the shared database)
 * with a folder and SQLite file of its own, `<dir>/<name>.db`; pass `dir` to start one again on its file.
 */
export function startReplica(config: unknown, name: string, env: NodeJS.ProcessEnv, dir: string = tempDir()): Promise<GatewayProcess> {
  return startGatewayProcess(config, { dir, dbPath: `${dir}/${name}.db`, env });
}
