/**
 * Webhook drain: 10,000 deliveries queued at once (one transaction, through the test-only emitter
 * route) to a local receiver, and how fast the dispatcher empties the outbox, alone and while the
 * gateway serves non-streaming chat at 50 connections, whose throughput is measured at the same time.
 *   npm run build && node dist/bench/webhook-drain.js     (standalone: writes its section of RESULTS.md)
 *   BENCH_WEBHOOKS=1 npm run bench                         (as part of the full run)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { BENCH_MODEL } from './config.js';
import { startCpuMeter } from './cpu.js';
import { runLoad, type LoadResult } from './load.js';
import { SMALL_BODY } from './scenarios.js';
import { hasTaskset, onExitSync, pinSelf, runIfEntryPoint, startGateway, startSimulator, stopAll, type Proc } from './targets.js';
import { writeResultsSection } from './sections.js';

export const DRAIN_DELIVERIES = 10_000;
const PROJECT = 'proj_hooks';
const CHAT_PATH = `/${PROJECT}/chat/v1/chat/completions`;

export interface DrainRun {
  readonly label: string;
  readonly queueMs: number;
  readonly drainMs: number;
  readonly deliveriesPerSec: number;
  readonly gatewayCpuUsPerDelivery: number | null;
  readonly chat: LoadResult | null;
}

export interface WebhookDrainResult {
  readonly deliveries: number;
  readonly chatAlone: LoadResult;
  readonly runs: DrainRun[];
  readonly notes: string[];
}

/** A receiver that answers 204 at once and counts. Runs in the bench process (the client core). */
async function startCountingReceiver(): Promise<{ server: Server; url: string; count: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n += 1;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, count: () => n };
}

function writeDrainConfig(dir: string, upstreamUrl: string): { file: string; db: string; chatKey: string; adminKey: string } {
  const chatKey = `svc_hooks_${randomBytes(32).toString('base64url')}`;
  const adminKey = `svc_hooks_${randomBytes(32).toString('base64url')}`;
  const db = join(dir, 'webhooks.db');
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: db },
    security: { allow_private_targets: true, allow_http_targets: true },
    testing: { event_injection: true },
    limits: { management_requests_per_minute: 0 },
    projects: [
      {
        id: PROJECT,
        slug: 'hooks',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        endpoints: [
          {
            id: randomUUID(),
            slug: 'chat',
            name: 'Bench',
            kind: 'chat',
            tier: 'gpu',
            model: { id: BENCH_MODEL, context_window: 32768 },
            upstream: { base_url: upstreamUrl, model: 'sim-chat' },
          },
        ],
        keys: [
          { value: chatKey, scopes: ['inference'] },
          { value: adminKey, scopes: ['management'] },
        ],
      },
    ],
  };
  parseConfig(raw, 'webhook bench config');
  const file = join(dir, 'webhooks.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db, chatKey, adminKey };
}

async function post(url: string, body: unknown, key?: string): Promise<{ status: number; json: unknown }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

interface DrainShape {
  readonly label: string;
  /** The event type emitted and how many events: events x subscribers = DRAIN_DELIVERIES. */
  readonly type: string;
  readonly events: number;
}

const ONE_ENDPOINT: DrainShape = { label: '1 endpoint', type: 'batch.completed', events: DRAIN_DELIVERIES };
const FOUR_ENDPOINTS: DrainShape = { label: '4 endpoints', type: 'batch.failed', events: DRAIN_DELIVERIES / 4 };

async function drainOnce(gw: Proc, receiverCount: () => number, shape: DrainShape, chat: (() => Promise<LoadResult>) | null, label: string): Promise<DrainRun> {
  const base = receiverCount();
  const meter = startCpuMeter(gw.pid);
  const load = chat ? chat() : null;
  const started = performance.now();
  const queued = await post(`${gw.url}/__test/webhook-events`, { project: PROJECT, type: shape.type, data: { batch_id: 'batch_bench' }, count: shape.events });
  const queueMs = performance.now() - started;
  if (queued.status !== 200 || (queued.json as { queued: number }).queued !== DRAIN_DELIVERIES) {
    throw new Error(`queueing failed: ${queued.status} ${JSON.stringify(queued.json)}`);
  }
  const deadline = Date.now() + 120_000;
  while (receiverCount() - base < DRAIN_DELIVERIES) {
    if (Date.now() > deadline) throw new Error(`drain stalled at ${receiverCount() - base} of ${DRAIN_DELIVERIES}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const drainMs = performance.now() - started;
  const cpu = meter.stop(DRAIN_DELIVERIES);
  return {
    label: `${label}, ${shape.label}`,
    queueMs,
    drainMs,
    deliveriesPerSec: DRAIN_DELIVERIES / (drainMs / 1000),
    gatewayCpuUsPerDelivery: chat ? null : cpu,
    chat: load ? await load : null,
  };
}

export async function runWebhookDrain(opts: { dir: string; simUrl: string; proxyCore: number | null; seconds: number }): Promise<WebhookDrainResult> {
  const loadBefore = loadavg()[0] ?? 0;
  const cfg = writeDrainConfig(opts.dir, opts.simUrl);
  const gw = await startGateway(opts.dir, opts.proxyCore, { name: 'gateway-webhooks', config: cfg.file, db: cfg.db, logLevel: 'warn' });
  const receiver = await startCountingReceiver();
  try {
    const subscribe = async (type: string): Promise<void> => {
      const created = await post(`${gw.url}/${PROJECT}/v1/webhooks`, { url: receiver.url, events: [type] }, cfg.adminKey);
      if (created.status !== 201) throw new Error(`webhook creation failed: ${created.status} ${JSON.stringify(created.json)}`);
    };
    await subscribe(ONE_ENDPOINT.type);
    for (let i = 0; i < 4; i += 1) await subscribe(FOUR_ENDPOINTS.type);
    const chatSpec = { url: `${gw.url}${CHAT_PATH}`, connections: 50, headers: { authorization: `Bearer ${cfg.chatKey}` }, body: SMALL_BODY };
    const chat = (): Promise<LoadResult> => runLoad({ ...chatSpec, seconds: opts.seconds });
    await runLoad({ ...chatSpec, seconds: 1 });
    const warm = await drainOnce(gw, receiver.count, ONE_ENDPOINT, null, 'warm-up');
    const chatAlone = await chat();
    const runs: DrainRun[] = [];
    for (const shape of [ONE_ENDPOINT, FOUR_ENDPOINTS]) runs.push(await drainOnce(gw, receiver.count, shape, null, 'drain alone'));
    for (const shape of [ONE_ENDPOINT, FOUR_ENDPOINTS]) {
      runs.push(await drainOnce(gw, receiver.count, shape, chat, `drain during chat load (50 conn, ${opts.seconds} s)`));
    }
    const notes = [
      `warm-up drain (not reported): ${Math.round(warm.deliveriesPerSec)} deliveries/s`,
      `${DRAIN_DELIVERIES} deliveries each run: ${ONE_ENDPOINT.events} events to 1 endpoint, or ${FOUR_ENDPOINTS.events} events fanned out to 4 endpoints; receiver: node:http in the bench process answering 204`,
      'gateway defaults: 64 requests open overall, 16 per endpoint, as many again signed ahead (one pool task per claimed batch)',
      'queueing = the one transaction writing the events and their deliveries (test-only route); drain time counts from the start of queueing to the last delivery received; the chat load runs for its fixed duration from the same start',
      `1-minute load average: ${loadBefore.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`,
    ];
    return { deliveries: DRAIN_DELIVERIES, chatAlone, runs, notes };
  } finally {
    receiver.server.closeAllConnections();
    receiver.server.close();
    await gw.stop();
  }
}

const fmt = (n: number | null | undefined, digits = 0): string => (n === null || n === undefined ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

export function renderWebhookDrain(r: WebhookDrainResult): string {
  const lines = [
    `## Webhook drain: ${fmt(r.deliveries)} queued deliveries to a local receiver`,
    '',
    '| run | queueing ms | drain ms | deliveries/s | gateway CPU us/delivery | chat req/s | chat p99 ms | chat non-2xx |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| chat alone (50 conn) | - | - | - | - | ${fmt(r.chatAlone.reqPerSec)} | ${fmt(r.chatAlone.p99, 2)} | ${r.chatAlone.non2xx} |`,
    ...r.runs.map(
      (run) =>
        `| ${run.label} | ${fmt(run.queueMs)} | ${fmt(run.drainMs)} | ${fmt(run.deliveriesPerSec)} | ${fmt(run.gatewayCpuUsPerDelivery)} | ${fmt(run.chat?.reqPerSec)} | ${fmt(run.chat?.p99, 2)} | ${run.chat?.non2xx ?? '-'} |`,
    ),
    '',
    ...r.notes.map((n) => `- ${n}`),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const pinned = hasTaskset() && pinSelf(0);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-hooks-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const sim = await startSimulator(dir, pinned ? 0 : null);
    const result = await runWebhookDrain({ dir, simUrl: sim.url, proxyCore: pinned ? 1 : null, seconds: Number(process.env.BENCH_SECONDS ?? 5) });
    const section = `${renderWebhookDrain(result)}\n- pinning: ${pinned ? 'bench process, receiver and simulator on core 0; gateway on core 1' : 'none'}; run ${new Date().toISOString()}, \`node dist/bench/webhook-drain.js\``;
    process.stdout.write(`${section}\n`);
    writeResultsSection('webhook-drain', section);
  } finally {
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'webhook', main);
