/**
 * Management writes beside chat traffic (issue 19, defect 2). Chat turns are stored by the usage writer
 * thread on its own SQLite connection, committing every few milliseconds; the management routes write on
 * the main connection. A transaction that read before it wrote (the webhook cap's count, then the insert)
 * began as a reader and could not upgrade once the writer thread had committed in between: SQLite answers
 * SQLITE_BUSY_SNAPSHOT (or SQLITE_BUSY while the other holds the lock) at once, `busy_timeout` never
 * retries an upgrade, and the route answered 500. Every control-plane write must succeed under that load.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT, WS_B, WS_C } from '../helpers/configs.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';

// The management ceiling and the project's request rate raised far above what this suite sends: a 429
// would hide the very writes under test.
const suite = useGatewaySuite({
  limits: { management_requests_per_minute: 1_000_000 },
  rateLimit: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 },
});

const PUBLIC_URL = 'https://93.184.216.34/hooks';
const CHAT_LOOPS = 6;
const WEBHOOK_LOOPS = 4;
const WEBHOOK_CYCLES = 150;
const KEY_LOOPS = 2;
const KEY_CYCLES = 30;
const OTHER_CYCLES = 60;

const base = (): string => `${suite.gw.url}/${PROJECT}`;

interface Outcome {
  readonly op: string;
  readonly status: number;
  readonly body: unknown;
}

/** Every answer, by operation: the test's verdict is over all of them. */
class Tally {
  readonly outcomes: Outcome[] = [];
  async run(op: string, request: Promise<JsonResponse>): Promise<JsonResponse> {
    const res = await request;
    this.outcomes.push({ op, status: res.status, body: res.body });
    return res;
  }
  serverErrors(): Outcome[] {
    return this.outcomes.filter((o) => o.status >= 500);
  }
  count(prefix: string): number {
    return this.outcomes.filter((o) => o.op.startsWith(prefix)).length;
  }
}

async function chatLoop(tally: Tally, until: () => boolean, n: number): Promise<void> {
  for (let i = 0; !until(); i += 1) {
    await tally.run(
      'chat',
      call(`${base()}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: `turn ${n}.${i}` }] } }),
    );
  }
}

async function webhookCycles(tally: Tally, loop: number): Promise<void> {
  const key = suite.keys.full;
  for (let i = 0; i < WEBHOOK_CYCLES; i += 1) {
    const created = await tally.run('webhook.create', call(`${base()}/v1/webhooks`, { key, body: { url: PUBLIC_URL, events: ['exec.completed'] } }));
    if (created.status !== 201) continue;
    const id = (created.body as { id: string }).id;
    await tally.run('webhook.update', call(`${base()}/v1/webhooks/${id}`, { method: 'PUT', key, body: { description: `loop ${loop} cycle ${i}` } }));
    await tally.run('webhook.delete', call(`${base()}/v1/webhooks/${id}`, { method: 'DELETE', key }));
  }
}

async function keyCycles(tally: Tally): Promise<void> {
  const key = suite.keys.full;
  const keys = `${base()}/v1/management/api-keys`;
  for (let i = 0; i < KEY_CYCLES; i += 1) {
    const created = await tally.run('key.create', call(keys, { key, body: { name: `load ${i}` } }));
    if (created.status !== 201) continue;
    const id = (created.body as { id: string }).id;
    await tally.run('key.rotate', call(`${keys}/${id}/rotate`, { key, body: {} }));
    await tally.run('key.revoke', call(`${keys}/${id}`, { method: 'DELETE', key }));
  }
}

/** Budget overrides and workspace routing: single-statement writes, kept here so they stay that way. */
async function otherCycles(tally: Tally): Promise<void> {
  const key = suite.keys.full;
  const budget = `${base()}/v1/management/budgets/workspaces/${WS_C}`;
  const workspace = `${base()}/v1/management/workspaces/${WS_B}`;
  for (let i = 0; i < OTHER_CYCLES; i += 1) {
    await tally.run('budget.put', call(budget, { method: 'PUT', key, body: { daily_tokens: 1_000_000_000 + i } }));
    await tally.run('budget.delete', call(budget, { method: 'DELETE', key }));
    await tally.run('workspace.patch', call(workspace, { method: 'PATCH', key, body: { inference_routing_mode: i % 2 === 0 ? 'concrete' : null } }));
  }
}

describe('management writes beside steady chat traffic', () => {
  it('answers every webhook, key, budget and workspace write without a 5xx while the usage writer commits', { timeout: 180_000 }, async () => {
    const tally = new Tally();
    // Chat first, so the usage writer is committing before the first management write.
    let writesDone = false;
    const chat = Array.from({ length: CHAT_LOOPS }, (_, n) => chatLoop(tally, () => writesDone, n));
    while (tally.count('chat') < CHAT_LOOPS * 4) await new Promise((resolve) => setTimeout(resolve, 20));

    const writes = [
      ...Array.from({ length: WEBHOOK_LOOPS }, (_, loop) => webhookCycles(tally, loop)),
      ...Array.from({ length: KEY_LOOPS }, () => keyCycles(tally)),
      otherCycles(tally),
    ];
    await Promise.all(writes);
    writesDone = true;
    await Promise.all(chat);

    const errors = tally.serverErrors();
    const byOp = new Map<string, number>();
    for (const e of errors) byOp.set(e.op, (byOp.get(e.op) ?? 0) + 1);
    const writeCount = tally.outcomes.filter((o) => o.op !== 'chat').length;
    console.log(`store concurrency: ${writeCount} management writes, ${tally.count('chat')} chat turns, 5xx by operation: ${JSON.stringify(Object.fromEntries(byOp))}`);

    // The gateway's own account of a failure (pino level 50 = error), so a regression names its cause.
    const logged = suite.gw.stdout.join('').split('\n').filter((line) => line.includes('"level":50')).slice(0, 3);
    expect(errors.map((e) => `${e.op} ${e.status} ${JSON.stringify(e.body)}`), logged.join('\n')).toEqual([]);
    // Every write was answered as designed, not merely "not 5xx".
    const unexpected = tally.outcomes.filter((o) => o.op !== 'chat' && ![200, 201].includes(o.status));
    expect(unexpected.map((o) => `${o.op} ${o.status} ${JSON.stringify(o.body)}`)).toEqual([]);
    expect(tally.outcomes.filter((o) => o.op === 'chat' && o.status !== 200)).toEqual([]);
    expect(tally.count('webhook.delete')).toBe(WEBHOOK_LOOPS * WEBHOOK_CYCLES);
    expect(tally.count('key.revoke')).toBe(KEY_LOOPS * KEY_CYCLES);
  });

  it('leaves no webhook endpoint behind once every cycle deleted its own', async () => {
    const res = await call(`${base()}/v1/webhooks?limit=100`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    expect((res.body as { data: unknown[] }).data).toEqual([]);
  });
});
