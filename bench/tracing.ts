/**
 * What OpenTelemetry tracing costs a request (issue 34): one simulator, a sink collector in this process
 * (accepts every OTLP/HTTP export with 200, counts its bytes), and the same gateway build twice, with
 * `tracing:` off and on (every request sampled, exported in batches to the sink), measured in rotating
 * rounds in one run so a busy minute on this shared machine moves both sides alike. The figure is the
 * median over rounds of each round's on - off CPU per request. Both run at warn (no access line), so the
 * difference is the tracing alone.
 *   npm run build && node dist/bench/tracing.js
 * Env: TRACING_ROUNDS (default 5), TRACING_SECONDS (per side and round, default 3), TRACING_STREAM=1 (the
 * streamed scenario too), TRACING_OTHER_DIST=<dist dir of another build> (adds that build, tracing off:
 * e.g. the commit before tracing existed, to show tracing off costs nothing).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBenchConfig } from './config.js';
import { median } from './limiter-cost.js';
import { runRotatingRounds } from './cpu-rounds.js';
import { runLoad } from './load.js';
import { SMALL_BODY, type Scenario, type Target } from './scenarios.js';
import { freePort, hasTaskset, onExitSync, pinSelf, runIfEntryPoint, serveArgs, startProc, startSimulator, stopAll } from './targets.js';

const ROUNDS = Number(process.env.TRACING_ROUNDS ?? 5);
const SECONDS = Number(process.env.TRACING_SECONDS ?? 3);
const distDir = new URL('..', import.meta.url).pathname;

const log = (msg: string): void => void process.stderr.write(`tracing bench: ${msg}\n`);

/** The sink collector: what the gateway's exporter posts to, answered at once. */
async function startSink(): Promise<{ url: string; exports: () => number; bytes: () => number; close: () => void }> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => void (bytes += c.length));
    req.on('end', () => {
      exports += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, exports: () => exports, bytes: () => bytes, close: () => server.close() };
}

async function startGatewayFrom(dist: string, dir: string, core: number | null, name: string, simUrl: string, tracing: Record<string, unknown> | undefined): Promise<Target> {
  const cfg = writeBenchConfig({ upstreamUrl: simUrl, dir, name, ...(tracing ? { tracing } : {}) });
  const port = await freePort();
  const proc = await startProc({
    name,
    args: serveArgs(dist, ['--config', cfg.file, '--port', String(port), '--db', cfg.dbPath]),
    core,
    logDir: dir,
    env: { SWITCHBOARD_LOG_LEVEL: 'warn' },
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
  log(`${name}: ${proc.url} (pid ${proc.pid}, output in ${proc.logFile})`);
  return { key: 'gateway', label: name, url: `${proc.url}${cfg.chatPath}`, headers: { authorization: `Bearer ${cfg.key}` }, cpuPid: proc.pid, cpuOf: 'gateway' };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const pinned = hasTaskset() && pinSelf(0);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-tracing-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const sink = await startSink();
  const sim = await startSimulator(dir, pinned ? 0 : null);
  const core = pinned ? 1 : null;
  const on = { enabled: true, otlp_endpoint: sink.url, sample_ratio: 1, export_delay_ms: 1000 };
  const targets = [await startGatewayFrom(distDir, dir, core, 'tracing off', sim.url, undefined), await startGatewayFrom(distDir, dir, core, 'tracing on', sim.url, on)];
  const other = process.env.TRACING_OTHER_DIST;
  if (other) targets.push(await startGatewayFrom(other, dir, core, 'other build', sim.url, undefined));
  for (const t of targets) await runLoad({ url: t.url, connections: 50, seconds: 2, headers: t.headers, body: SMALL_BODY });

  const scenarios: Scenario[] = [{ id: 'json-50', label: 'non-streaming, 50 conn', stream: false, connections: 50 }];
  if (process.env.TRACING_STREAM === '1') scenarios.push({ id: 'stream-50', label: 'streaming 20 chunks, 50 conn', stream: true, connections: 50 });
  const out: string[] = [];
  for (const scenario of scenarios) {
    const rows = await runRotatingRounds(targets, scenario, SECONDS, ROUNDS, log);
    const cpu = (label: string): number[] => (rows.get(label) ?? []).map((r) => r.cpuUsPerReq ?? NaN);
    const off = cpu('tracing off');
    out.push(`${scenario.label}, ${ROUNDS} rounds of ${SECONDS} s:`);
    for (const t of targets) {
      const c = cpu(t.label);
      const deltas = c.map((v, i) => v - (off[i] ?? NaN));
      const reqs = (rows.get(t.label) ?? []).map((r) => r.load.reqPerSec);
      const errs = (rows.get(t.label) ?? []).reduce((n, r) => n + r.load.non2xx + r.load.errors, 0);
      out.push(
        `  ${t.label.padEnd(12)} CPU/req median ${median(c)?.toFixed(1)} us (${c.map((v) => v.toFixed(1)).join(', ')}); minus off median ${median(deltas)?.toFixed(1)} us ` +
          `(${deltas.map((d) => d.toFixed(1)).join(', ')}); req/s median ${Math.round(median(reqs) ?? 0)}; non-2xx + errors ${errs}`,
      );
    }
  }
  out.push(`sink: ${sink.exports()} exports, ${(sink.bytes() / 1e6).toFixed(1)} MB`);
  out.push(`pinning: ${pinned ? 'bench process, sink and simulator on core 0, gateways on core 1' : 'none'}; load average ${loadBefore.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`);
  process.stdout.write(`${out.join('\n')}\n`);
  sink.close();
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'tracing', main);
