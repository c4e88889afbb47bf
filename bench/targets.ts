/**
 * Starts the processes under test (simulator, bare proxy, gateway), optionally pinned to a core with
 * `taskset -c`, and makes sure every one of them is killed at the end, on error and on SIGINT.
 * Child stdout/stderr go to files in the run's temp dir, never through a pipe into this process: the
 * client runs here, and an info-level gateway log would otherwise cost the client core CPU.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { freePort as freePortOn } from '../src/workers/free-port.js';
import { CHAT_PATH, writeBenchConfig } from './config.js';

export interface Proc {
  readonly name: string;
  /** The node process itself (taskset execs it, so it is the child's pid). */
  readonly pid: number;
  /** URL printed by the process once it listens. */
  readonly url: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
const exitCleanups: (() => void)[] = [];
let hooksInstalled = false;

/** Synchronous cleanup (e.g. removing the temp dir) that also runs on SIGINT/SIGTERM. */
export function onExitSync(fn: () => void): void {
  installHooks();
  exitCleanups.push(fn);
}

export function hasTaskset(): boolean {
  const r = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
  return r.status === 0;
}

/** Pins this process (every thread: autocannon's client side runs here) to `core`. */
export function pinSelf(core: number): boolean {
  return spawnSync('taskset', ['-a', '-cp', String(core), String(process.pid)], { stdio: 'ignore' }).status === 0;
}

/** What a standalone section starts with: this process on core 0 when it can be, a temp dir removed at exit. */
export interface StandaloneBench {
  /** Whether this process is on core 0 (the gateway then goes on core 1). */
  readonly pinned: boolean;
  readonly dir: string;
  /** `<load at start> at start, <load now> at end (<cores> cores)`, for the section's footer. */
  loadLine(): string;
}

export function standaloneBench(dirPrefix: string): StandaloneBench {
  const cores = availableParallelism();
  const loadBefore = (loadavg()[0] ?? 0).toFixed(2);
  const pinned = hasTaskset() && cores >= 2 && pinSelf(0);
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  // BENCH_KEEP_DIR=1: the children's logs (and their databases) are left for reading after the run.
  if (process.env.BENCH_KEEP_DIR !== '1') onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  else process.stderr.write(`bench: the run's directory is kept: ${dir}\n`);
  return { pinned, dir, loadLine: () => `${loadBefore} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end (${cores} cores)` };
}

function killAllSync(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
  for (const fn of exitCleanups.splice(0)) {
    try {
      fn();
    } catch {
      // best effort: we are exiting
    }
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping child processes\n`);
      killAllSync();
      process.exit(130);
    });
  }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((child) => stopChild(child)));
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    live.delete(child);
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(hard);
      live.delete(child);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface StartOptions {
  readonly name: string;
  /** Arguments to node (script first). */
  readonly args: readonly string[];
  readonly core: number | null;
  readonly env?: NodeJS.ProcessEnv;
  readonly logDir: string;
  /** Extracts the listening URL from the log text, or returns null while not ready. */
  readonly ready: (text: string) => string | null | Promise<string | null>;
  /** Default 120 s: on the shared 2-core machine at load 20-30 a gateway took over 60 s to start. */
  readonly timeoutMs?: number;
}

export async function startProc(options: StartOptions): Promise<Proc> {
  installHooks();
  const logFile = join(options.logDir, `${options.name.replace(/[^\w.-]+/g, '_')}.log`);
  const fd = openSync(logFile, 'w');
  // BENCH_PROFILE_DIR: every child writes a V8 CPU profile there when it exits (NODE_OPTIONS refuses --cpu-prof).
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  // BENCH_NODE_FLAGS: more V8 flags for every child (--trace-deopt, say; NODE_OPTIONS refuses most of them).
  const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter((f) => f !== '') ?? [];
  const nodeArgs = [process.execPath, ...profile, ...flags, ...options.args];
  const [cmd, ...args] = options.core === null ? nodeArgs : ['taskset', '-c', String(options.core), ...nodeArgs];
  const child = spawn(cmd!, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...options.env } });
  closeSync(fd);
  live.add(child);
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    const text = readFileSync(logFile, 'utf8');
    const url = await options.ready(text);
    if (url !== null && child.pid !== undefined) {
      return { name: options.name, pid: child.pid, url, logFile, stop: () => stopChild(child) };
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stopChild(child);
      const why = child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : 'did not start in time';
      throw new Error(`${options.name} ${why}; its output:\n${text.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

const distDir = new URL('..', import.meta.url).pathname; // dist/ (this file is dist/bench/targets.js)

export function startSimulator(logDir: string, core: number | null): Promise<Proc> {
  return startProc({
    name: 'simulator',
    args: [join(distDir, 'src/cli.js'), 'simulate', '--port', '0'],
    core,
    logDir,
    ready: (t) => /simulator listening on (\S+)/.exec(t)?.[1] ?? null,
  });
}

export function startBareProxy(logDir: string, core: number | null, upstream: string): Promise<Proc> {
  return startProc({
    name: 'bare-proxy',
    args: [join(distDir, 'bench/bare-proxy.js'), '--port', '0', '--upstream', upstream],
    core,
    logDir,
    ready: (t) => /bare proxy listening on (\S+)/.exec(t)?.[1] ?? null,
  });
}

/** A port that was free a moment ago (the gateway's listening line is an info log, absent at warn). */
export const freePort = (): Promise<number> => freePortOn('127.0.0.1');

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await request(`${url}/healthz`, { headersTimeout: 1000, bodyTimeout: 1000 });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

/**
 * `node <flags> <dist>/src/cli.js serve <args>`, the flags being those of that build's `switchboard`
 * shebang (`#!/usr/bin/env -S node --max-semi-space-size=64`): the gateway as a user starts it, and a
 * build before a flag existed compared as it was run.
 */
export function serveArgs(dist: string, args: readonly string[]): string[] {
  const cli = join(dist, 'src/cli.js');
  const shebang = readFileSync(cli, 'utf8').split('\n', 1)[0] ?? '';
  const words = shebang.replace(/^#!\s*/, '').split(/\s+/);
  const flags = words.slice(words.indexOf('node') + 1).filter((w) => w.startsWith('--'));
  return [...flags, cli, 'serve', ...args];
}

export async function startGateway(
  logDir: string,
  core: number | null,
  /** `dist`: another build's dist/ directory (a before/after comparison in one run); default this one. */
  opts: { name: string; config: string; db: string; logLevel: string; dist?: string },
): Promise<Proc> {
  const port = await freePort();
  const fallbackUrl = `http://127.0.0.1:${port}`;
  return startProc({
    name: opts.name,
    args: serveArgs(opts.dist ?? distDir, ['--config', opts.config, '--port', String(port), '--db', opts.db]),
    core,
    logDir,
    // The bench configs' `testing:` hooks (webhook-drain's event injection) need it too.
    env: { SWITCHBOARD_LOG_LEVEL: opts.logLevel, SWITCHBOARD_TESTING: '1' },
    ready: async (t) => {
      for (const line of t.split('\n')) {
        if (!line.includes('switchboard listening')) continue;
        try {
          const parsed = JSON.parse(line) as { msg?: unknown; url?: unknown };
          if (parsed.msg === 'switchboard listening' && typeof parsed.url === 'string') return parsed.url;
        } catch {
          // a partial line: read again
        }
      }
      return (await healthy(fallbackUrl)) ? fallbackUrl : null;
    },
  });
}

/**
 * Runs a bench's main when its module is the process entry point (the full run imports the same module
 * for its functions), stopping every child process on failure.
 */
export function runIfEntryPoint(moduleUrl: string, label: string, main: () => Promise<void>): void {
  if (!process.argv[1] || fileURLToPath(moduleUrl) !== process.argv[1]) return;
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${label} bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      void stopAll().finally(() => process.exit(1));
    },
  );
}

/** A gateway on the bench config, serving the chat route: its chat URL, key header and pid. */
export interface BenchSide {
  readonly proc: Proc;
  readonly chatUrl: string;
  readonly headers: Record<string, string>;
}

/**
 * The sides the per-request benches compare (issue 35): the simulator, the bare proxy and this build's
 * gateway, proxies pinned to core 1; with `otherDist`, that build's gateway too (same config shape and level).
 */
export async function startComparedSides(
  bench: StandaloneBench,
  logLevel: string,
  otherDist?: string,
  moreDists: readonly string[] = [],
): Promise<{ bare: BenchSide; gateway: BenchSide; other: BenchSide | null; more: BenchSide[] }> {
  const core = bench.pinned ? 1 : null;
  const sim = await startSimulator(bench.dir, bench.pinned ? 0 : null);
  const gatewaySide = async (name: string, stem: string, dist?: string): Promise<BenchSide> => {
    const cfg = writeBenchConfig({ upstreamUrl: sim.url, dir: bench.dir, name: stem });
    const proc = await startGateway(bench.dir, core, { name, config: cfg.file, db: cfg.dbPath, logLevel, ...(dist ? { dist } : {}) });
    return { proc, chatUrl: `${new URL(proc.url).origin}${cfg.chatPath}`, headers: { authorization: `Bearer ${cfg.key}` } };
  };
  const bareProc = await startBareProxy(bench.dir, core, sim.url);
  const gateway = await gatewaySide('gateway', 'gateway');
  const bare = { proc: bareProc, chatUrl: `${new URL(bareProc.url).origin}${CHAT_PATH}`, headers: gateway.headers };
  const other = otherDist ? await gatewaySide('other build', 'other', otherDist) : null;
  const more: BenchSide[] = [];
  for (const [i, dist] of moreDists.entries()) more.push(await gatewaySide(`build ${i + 3}`, `more${i}`, dist));
  return { bare, gateway, other, more };
}

