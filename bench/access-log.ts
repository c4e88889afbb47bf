/**
 * What the access line costs (issue 17: "the request log at info costs <= 10% of a request"): one
 * simulator, and the same gateway build twice, at SWITCHBOARD_LOG_LEVEL=info (stdout to a file, as
 * `serve` runs by default) and at warn (no access line), measured in rotating rounds in one run so a busy
 * minute on this shared machine moves every side of a round alike. The figure is the median over rounds
 * of each round's info / warn CPU per request.
 *   npm run build && node dist/bench/access-log.js
 * Env: ACCESS_ROUNDS (default 7), ACCESS_SECONDS (per side and round, default 4), ACCESS_STREAM=1 (the
 * streamed scenario too), ACCESS_OTHER_DIST=<dist dir of another build> (adds that build at info, e.g.
 * the previous commit's, for before/after in the same run), ACCESS_PROF_DIR=<dir> (every gateway runs
 * with --cpu-prof into that dir; CPU figures are then inflated by the profiler).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBenchConfig } from './config.js';
import { median } from './limiter-cost.js';
import { runRotatingRounds } from './cpu-rounds.js';
import { runLoad } from './load.js';
import { SMALL_BODY, type Scenario, type Target } from './scenarios.js';
import { freePort, hasTaskset, onExitSync, pinSelf, runIfEntryPoint, serveArgs, startProc, startSimulator, stopAll, type Proc } from './targets.js';

const ROUNDS = Number(process.env.ACCESS_ROUNDS ?? 7);
const SECONDS = Number(process.env.ACCESS_SECONDS ?? 4);
const distDir = new URL('..', import.meta.url).pathname;

const log = (msg: string): void => void process.stderr.write(`access-log bench: ${msg}\n`);

async function startGatewayFrom(dist: string, dir: string, core: number | null, name: string, level: string, simUrl: string): Promise<Target> {
  const cfg = writeBenchConfig({ upstreamUrl: simUrl, dir, name });
  const port = await freePort();
  const prof = process.env.ACCESS_PROF_DIR;
  const proc: Proc = await startProc({
    name,
    args: [...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof, '--cpu-prof-name', `${name}.cpuprofile`] : []), ...serveArgs(dist, ['--config', cfg.file, '--port', String(port), '--db', cfg.dbPath])],
    core,
    logDir: dir,
    env: { SWITCHBOARD_LOG_LEVEL: level },
    ready: async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.arrayBuffer();
        return res.status === 200 ? `http://127.0.0.1:${port}` : null;
      } catch {
        return null;
      }
    },
  });
  log(`${name} at ${level}: ${proc.url} (pid ${proc.pid}, output in ${proc.logFile})`);
  return { key: 'gateway', label: name, url: `${proc.url}${cfg.chatPath}`, headers: { authorization: `Bearer ${cfg.key}` }, cpuPid: proc.pid, cpuOf: 'gateway' };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const pinned = hasTaskset() && pinSelf(0);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-access-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulator(dir, pinned ? 0 : null);
  const core = pinned ? 1 : null;
  const targets = [await startGatewayFrom(distDir, dir, core, 'info', 'info', `${sim.url}`), await startGatewayFrom(distDir, dir, core, 'warn', 'warn', sim.url)];
  const other = process.env.ACCESS_OTHER_DIST;
  if (other) targets.push(await startGatewayFrom(other, dir, core, 'info (other build)', 'info', sim.url));
  for (const t of targets) await runLoad({ url: t.url, connections: 50, seconds: 2, headers: t.headers, body: SMALL_BODY });

  const scenarios: Scenario[] = [{ id: 'json-50', label: 'non-streaming, 50 conn', stream: false, connections: 50 }];
  if (process.env.ACCESS_STREAM === '1') scenarios.push({ id: 'stream-50', label: 'streaming 20 chunks, 50 conn', stream: true, connections: 50 });
  const out: string[] = [];
  for (const scenario of scenarios) {
    const rows = await runRotatingRounds(targets, scenario, SECONDS, ROUNDS, log);
    const cpu = (label: string): number[] => (rows.get(label) ?? []).map((r) => r.cpuUsPerReq ?? NaN);
    const warn = cpu('warn');
    out.push(`${scenario.label}, ${ROUNDS} rounds of ${SECONDS} s:`);
    for (const t of targets) {
      const c = cpu(t.label);
      const ratios = c.map((v, i) => v / (warn[i] ?? NaN));
      const reqs = (rows.get(t.label) ?? []).map((r) => r.load.reqPerSec);
      const errs = (rows.get(t.label) ?? []).reduce((n, r) => n + r.load.non2xx + r.load.errors, 0);
      out.push(
        `  ${t.label.padEnd(20)} CPU/req median ${median(c)?.toFixed(1)} us (${c.map((v) => v.toFixed(1)).join(', ')}); vs warn median ${median(ratios)?.toFixed(3)}x ` +
          `(${ratios.map((r) => r.toFixed(2)).join(', ')}); req/s median ${Math.round(median(reqs) ?? 0)}; non-2xx + errors ${errs}`,
      );
    }
  }
  out.push(`pinning: ${pinned ? 'bench process and simulator on core 0, gateways on core 1' : 'none'}; load average ${loadBefore.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`);
  process.stdout.write(`${out.join('\n')}\n`);
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'access-log', main);
