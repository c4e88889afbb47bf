/**
 * Usage accounting of chat turns (SPEC "What the service does" 4: one client request is one model turn,
 * billed once; "stream_options": usage is always tracked for billing; "service_tier": billing multipliers).
 * The proof is the gateway's own ledger: the `usage_events` rows in its SQLite file, read while it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_ID, makeKeys, PROJECT, REASONER_ID, SLOW_ID, testConfig, WS_DEFAULT, type TestKeys } from '../helpers/configs.js';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { waitForSim } from '../helpers/simulator-log.js';
import { chunksOf, parseSse, type SseFrame } from '../helpers/sse.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let ledger: UsageDb;
let fullKeyId: string;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(testConfig(sim.url, keys));
  ledger = openUsageDb(gw.dbPath);
  fullKeyId = ledger.keyIdFor(keys.full);
});

afterAll(async () => {
  ledger?.close();
  await gw?.stop();
  await sim?.stop();
});

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number | null };
}

interface Completion {
  id: string;
  service_tier: string;
  usage: Usage;
  choices: { message: Record<string, unknown> }[];
}

const url = (slug = 'chat'): string => `${gw.url}/${PROJECT}/${slug}/v1/chat/completions`;

let turn = 0;
/** A fresh user message per request, so simulator log entries can be told apart. */
const messages = (text = 'account for this turn'): { role: string; content: string }[] => [{ role: 'user', content: `${text} #${++turn}` }];

async function complete(body: Record<string, unknown>, slug = 'chat'): Promise<Completion> {
  const res = await call(url(slug), { key: keys.full, body: { model: 'client-model', messages: messages(), ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Completion;
}

interface StreamResult {
  readonly requestId: string;
  readonly frames: SseFrame[];
  readonly chunks: Record<string, unknown>[];
}

async function stream(body: Record<string, unknown>, slug = 'chat'): Promise<StreamResult> {
  const res = await fetch(url(slug), {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.full}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'client-model', messages: messages(), stream: true, ...body }),
  });
  expect(res.status).toBe(200);
  const requestId = res.headers.get('x-request-id') ?? '';
  const frames = parseSse(await res.text());
  return { requestId, frames, chunks: chunksOf(frames) };
}

function requestIdOf(res: JsonResponse): string {
  const id = res.headers.get('x-request-id');
  if (!id) throw new Error('no X-Request-ID header');
  return id;
}

/**
 * Proves a request left no row: a later turn's row is polled for, and the ledger writes rows in the order
 * they were recorded, so a row of the earlier request would be in the database by then.
 */
async function expectNoRowAfterBarrier(requestId: string): Promise<void> {
  const barrier = await complete({});
  await ledger.waitForRow(barrier.id);
  expect(ledger.rowsFor(requestId)).toEqual([]);
}

describe('non-streaming turns', () => {
  it('write exactly one completed row keyed by the response id, with the upstream usage', async () => {
    const before = Date.now();
    const body = await complete({ sim: { cached_tokens: 3 } });
    const row = await ledger.waitForRow(body.id);
    expect(ledger.rowsFor(body.id)).toHaveLength(1);
    expect(row).toMatchObject({
      request_id: body.id,
      project_id: PROJECT,
      workspace_id: WS_DEFAULT,
      endpoint_id: CHAT_ID,
      key_id: fullKeyId,
      route: 'chat',
      prompt_tokens: body.usage.prompt_tokens,
      completion_tokens: body.usage.completion_tokens,
      cached_tokens: 3,
      reasoning_tokens: null,
      service_tier: 'default',
      tier_multiplier: 1,
      status: 'completed',
      usage_source: 'upstream',
    });
    // The simulator counts prompt tokens as ceil(bytes / 4) of the messages it was sent.
    expect(body.usage.prompt_tokens).toBe(9);
    expect(body.usage.completion_tokens).toBe(16);
    expect(row.latency_ms).toBeGreaterThanOrEqual(0);
    expect(row.created_at).toBeGreaterThanOrEqual(before - 1000);
    expect(row.created_at).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it.each([
    ['flex', 'flex', 0.5],
    ['priority', 'priority', 1.25],
    ['default', 'default', 1],
    ['auto', 'default', 1],
    ['scale', 'default', 1],
    ['an unknown string', 'default', 1],
  ])('records service_tier %s as lane %s billed at %sx', async (sent, lane, multiplier) => {
    const serviceTier = sent === 'an unknown string' ? 'turbo-lane' : sent;
    const body = await complete({ service_tier: serviceTier });
    expect(body.service_tier).toBe(lane);
    const row = await ledger.waitForRow(body.id);
    expect({ service_tier: row.service_tier, tier_multiplier: row.tier_multiplier }).toEqual({ service_tier: lane, tier_multiplier: multiplier });
  });

  it('records a turn without service_tier as default at 1.0x', async () => {
    const body = await complete({});
    const row = await ledger.waitForRow(body.id);
    expect({ service_tier: row.service_tier, tier_multiplier: row.tier_multiplier }).toEqual({ service_tier: 'default', tier_multiplier: 1 });
  });
});

describe('streamed turns', () => {
  it('still write one row without include_usage, with estimated usage', async () => {
    const { requestId, chunks } = await stream({ sim: { tokens: 5 } });
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
    const row = await ledger.waitForRow(requestId);
    expect(ledger.rowsFor(requestId)).toHaveLength(1);
    expect(row).toMatchObject({ request_id: requestId, endpoint_id: CHAT_ID, key_id: fullKeyId, status: 'completed', usage_source: 'estimated' });
    // Estimated, and still exact: the simulator's 5 content chunks, and the gateway's token count of the prompt.
    expect(row.completion_tokens).toBe(5);
    expect(row.prompt_tokens).toBe(13);
  });

  it('write a row equal to the usage chunk with include_usage', async () => {
    const { requestId, chunks } = await stream({ stream_options: { include_usage: true }, service_tier: 'flex', sim: { tokens: 7, cached_tokens: 2 } });
    const usage = chunks.at(-1)?.usage as Usage;
    expect(usage.completion_tokens).toBe(7);
    const row = await ledger.waitForRow(requestId);
    expect(row).toMatchObject({
      request_id: requestId,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      cached_tokens: usage.prompt_tokens_details.cached_tokens,
      reasoning_tokens: null,
      service_tier: 'flex',
      tier_multiplier: 0.5,
      status: 'completed',
      usage_source: 'upstream',
    });
  });
});

describe('reasoning turns', () => {
  it('record reasoning_tokens counted inside completion_tokens', async () => {
    const body = await complete({ sim: { reasoning_tokens: 3, tokens: 5 } }, 'reasoner');
    expect(typeof body.choices[0]?.message.reasoning_content).toBe('string');
    const row = await ledger.waitForRow(body.id);
    expect(row).toMatchObject({ endpoint_id: REASONER_ID, reasoning_tokens: 3, completion_tokens: 8, status: 'completed', usage_source: 'upstream' });
    expect(row.completion_tokens).toBe(body.usage.completion_tokens);
    expect(row.reasoning_tokens).toBe(body.usage.completion_tokens_details.reasoning_tokens);
  });

  it('still bill the reasoning when reasoning.exclude hides its text', async () => {
    const body = await complete({ reasoning: { exclude: true }, sim: { reasoning_tokens: 3, tokens: 5 } }, 'reasoner');
    const message = body.choices[0]?.message ?? {};
    expect('reasoning_content' in message || 'reasoning' in message).toBe(false);
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(3);
    expect(body.usage.completion_tokens).toBe(8);
    const row = await ledger.waitForRow(body.id);
    expect(row).toMatchObject({ reasoning_tokens: 3, completion_tokens: 8, status: 'completed' });
  });

  it('still bill the reasoning of a streamed turn that excludes it and asks for no usage', async () => {
    const { requestId, chunks } = await stream({ reasoning: { exclude: true }, sim: { reasoning_tokens: 3, tokens: 5 } }, 'reasoner');
    const deltas = chunks.flatMap((c) => (c.choices as { delta: Record<string, unknown> }[]).map((ch) => ch.delta));
    expect(deltas.some((d) => 'reasoning_content' in d || 'reasoning' in d)).toBe(false);
    const row = await ledger.waitForRow(requestId);
    expect(row.usage_source).toBe('estimated');
    expect(row.reasoning_tokens).toBe(3);
    expect(row.completion_tokens).toBeGreaterThan(row.reasoning_tokens ?? 0);
  });
});

describe('turns that do not complete', () => {
  it('write one aborted row when the client disconnects mid-stream', async () => {
    const marker = `abort me #${++turn}`;
    const controller = new AbortController();
    const res = await fetch(url(), {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'client-model', messages: [{ role: 'user', content: marker }], stream: true, sim: { delay_ms: 100, tokens: 50 } }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id') ?? '';
    const reader = res.body?.getReader();
    const first = await reader?.read();
    expect(first?.done).toBe(false);
    controller.abort();
    await reader?.cancel().catch(() => undefined);

    const row = await ledger.waitForRow(requestId);
    expect(ledger.rowsFor(requestId)).toHaveLength(1);
    expect(row).toMatchObject({ request_id: requestId, endpoint_id: CHAT_ID, status: 'aborted' });
    // The upstream request is cancelled too rather than left to run its 5 s.
    const upstream = await waitForSim(sim.url, (r) => r.body.includes(marker) && r.aborted);
    expect(upstream.completed).toBe(false);
  });

  it('write one aborted row when the client disconnects while a non-streaming turn is running', async () => {
    const marker = `abort buffered #${++turn}`;
    const controller = new AbortController();
    const pending = fetch(url(), {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'client-model', messages: [{ role: 'user', content: marker }], sim: { delay_ms: 100, tokens: 50 } }),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    // Abort only once the upstream has the request, so the turn is really in flight.
    await waitForSim(sim.url, (r) => r.body.includes(marker));
    const before = ledger.count();
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);

    await waitForSim(sim.url, (r) => r.body.includes(marker) && r.aborted);
    expect(await ledger.waitForCount(before + 1)).toBe(before + 1);
    const rows = ledger.recent(1);
    expect(rows[0]).toMatchObject({ endpoint_id: CHAT_ID, status: 'aborted' });
  });

  it('write one timeout row when a stream goes idle past the tier idle timeout', async () => {
    const { requestId, frames } = await stream({ sim: { first_token_delay_ms: 0, delay_ms: 2000, tokens: 3 } }, 'slow');
    const timeout = frames.find((f) => f.event === 'error');
    expect(JSON.parse(timeout?.data ?? '{}')).toMatchObject({ error: { type: 'timeout_error' } });
    const row = await ledger.waitForRow(requestId);
    expect(row).toMatchObject({ endpoint_id: SLOW_ID, status: 'timeout' });
  });

  it('write one timeout row when a stream that keeps sending passes the tier request deadline', async () => {
    const { requestId, frames } = await stream({ sim: { delay_ms: 300, tokens: 20 } }, 'slow');
    const timeout = frames.find((f) => f.event === 'error');
    expect(JSON.parse(timeout?.data ?? '{}')).toMatchObject({ error: { type: 'timeout_error' } });
    const row = await ledger.waitForRow(requestId);
    expect(row).toMatchObject({ endpoint_id: SLOW_ID, status: 'timeout' });
  });

  it('write one error row when the upstream answers 500', async () => {
    const res = await call(url(), { key: keys.full, body: { model: 'client-model', messages: messages(), sim: { error_status: 500 } } });
    expectError(res, 500, 'internal_error');
    const requestId = requestIdOf(res);
    const row = await ledger.waitForRow(requestId);
    expect(ledger.rowsFor(requestId)).toHaveLength(1);
    expect(row).toMatchObject({ request_id: requestId, endpoint_id: CHAT_ID, key_id: fullKeyId, status: 'error' });
  });

  it('write one error row when the upstream connection dies mid-stream', async () => {
    const { requestId, chunks } = await stream({ sim: { fail_after: 2, tokens: 10 } });
    expect(chunks.at(-1)?.error).toBeDefined();
    const row = await ledger.waitForRow(requestId);
    expect(row).toMatchObject({ request_id: requestId, status: 'error' });
  });

  it('write one timeout row when a non-streaming turn passes the tier deadline', async () => {
    const res = await call(url('slow'), { key: keys.full, body: { model: 'client-model', messages: messages(), sim: { delay_ms: 200, tokens: 20 } } });
    expectError(res, 408, 'timeout');
    const requestId = requestIdOf(res);
    const row = await ledger.waitForRow(requestId);
    expect(row).toMatchObject({ request_id: requestId, endpoint_id: SLOW_ID, status: 'timeout' });
  });
});

describe('requests refused before the model is called', () => {
  it('write no row for a request refused by validation', async () => {
    const res = await call(url(), { key: keys.full, body: { model: 'client-model', messages: messages(), temperature: 5 } });
    expectError(res, 400, 'invalid_request', 'temperature');
    await expectNoRowAfterBarrier(requestIdOf(res));
  });

  it('write no row for a request refused by authentication', async () => {
    const res = await call(url(), { key: `svc_test_${'B'.repeat(43)}`, body: { model: 'client-model', messages: messages() } });
    expectError(res, 401, 'invalid_api_key');
    await expectNoRowAfterBarrier(requestIdOf(res));
  });

  it('write no row for a reasoning parameter refused on a non-reasoning model', async () => {
    const res = await call(url('plain'), { key: keys.full, body: { model: 'client-model', messages: messages(), reasoning_effort: 'high' } });
    expectError(res, 400, 'unsupported_parameter', 'reasoning_effort');
    await expectNoRowAfterBarrier(requestIdOf(res));
  });
});

describe('exactly once', () => {
  it('records one row per request id across many mixed concurrent turns', async () => {
    const before = ledger.count();
    const jobs: Promise<string>[] = [];
    for (let i = 0; i < 24; i++) {
      const kind = i % 4;
      if (kind === 0) jobs.push(complete({ sim: { tokens: 3 } }).then((b) => b.id));
      else if (kind === 1) jobs.push(stream({ sim: { tokens: 3 } }).then((s) => s.requestId));
      else if (kind === 2) jobs.push(stream({ stream_options: { include_usage: true }, sim: { tokens: 3 } }).then((s) => s.requestId));
      else {
        // A 500, not a 503: three 502-504 answers in a row take the endpoint's one server out of its pool
        // (failure_threshold 3), and which of these concurrent turns finish in a row is the scheduler's to say.
        jobs.push(
          call(url(), { key: keys.full, body: { model: 'client-model', messages: messages(), sim: { error_status: 500 } } }).then((r) => {
            expect(r.status).toBe(500);
            return requestIdOf(r);
          }),
        );
      }
    }
    const ids = await Promise.all(jobs);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) await ledger.waitForRow(id);
    // A later barrier turn flushes anything still queued: no turn may have left a second row.
    const barrier = await complete({});
    await ledger.waitForRow(barrier.id);
    expect(ledger.count()).toBe(before + ids.length + 1);
    expect(ledger.count()).toBe(ledger.distinctRequestIds());
    for (const id of ids) expect(ledger.rowsFor(id)).toHaveLength(1);
  });
});
