/**
 * Background responses (`background: true`, docs/decisions.md "Background responses") through the
 * official `openai` client and raw fetch: the create answers `queued` at once, the turn runs in the
 * gateway and retrieve shows it finish; cancel aborts the upstream call; streamed background responses
 * give their events in order and can be followed again from a sequence number; OpenAI's refusals.
 * A held upstream (test/helpers/held-upstream.ts) keeps a turn in flight for as long as a test needs.
 */
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { makeKeys, PROJECT, testConfig, WS_C } from '../helpers/configs.js';
import { completion, startHeldUpstream, type HeldUpstream } from '../helpers/held-upstream.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { useProcesses } from '../helpers/suite.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';
import { startReceiver, type ReceivedDelivery, type Receiver } from '../helpers/webhook-receiver.js';

const HELD_ID = 'a0000000-0000-4000-8000-0000000000b1';
let held: HeldUpstream;
let receiver: Receiver;
let ledger: UsageDb | null = null;

beforeAll(async () => {
  held = await startHeldUpstream();
  receiver = await startReceiver();
});

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, { security: { allow_private_targets: true, allow_http_targets: true }, webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 } });
  (config.projects[0]?.endpoints as unknown[]).push({
    id: HELD_ID,
    slug: 'held',
    name: 'Held',
    kind: 'chat',
    tier: 'gpu',
    model: { id: 'model-held', context_window: 8192 },
    upstream: { base_url: held.url, model: 'held-model' },
  });
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys };
});

afterAll(async () => {
  await held?.close();
  await receiver?.close();
});

const client = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/v1`, apiKey: suite.keys.full, maxRetries: 0 });
const responsesUrl = (): string => `${suite.gw.url}/${PROJECT}/v1/responses`;

function expectEnvelope(res: JsonResponse, status: number, code: string, param: string | null): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code, param } } });
  expect(Object.keys(res.body as object)).toEqual(['error']);
}

/** The delivery of event `type` for response `id`, whatever other deliveries came before or come after it. */
async function deliveryOf(type: string, id: string): Promise<unknown> {
  const isIt = (d: ReceivedDelivery): boolean => {
    const body = d.body as { type?: unknown; data?: { id?: unknown } } | undefined;
    return body?.type === type && body.data?.id === id;
  };
  for (;;) {
    const hit = receiver.received.find(isIt);
    if (hit) return hit.body;
    await receiver.waitFor(receiver.received.length + 1);
  }
}

/** Retrieves until the response leaves queued / in_progress (each poll is a real request; no fixed sleep). */
async function settled(id: string): Promise<OpenAI.Responses.Response> {
  for (let i = 0; i < 400; i++) {
    const r = await client().responses.retrieve(id);
    if (r.status !== 'queued' && r.status !== 'in_progress') return r;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`response ${id} never finished`);
}

describe('background responses', () => {
  it('answers queued at once, runs the turn in the gateway, and retrieve shows the completed Response with its usage row and event', async () => {
    const hook = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, { key: suite.keys.full, body: { url: receiver.url, events: ['response.completed', 'response.failed'] } });
    expect(hook.status).toBe(201);
    const created = await client().responses.create({ model: 'model-chat', input: 'Tell me about switchboards', instructions: 'Be brief.', background: true });
    expect(created).toMatchObject({ object: 'response', status: 'queued', background: true, store: true, output: [], usage: null, error: null });
    expect(created.id).toMatch(/^resp_[0-9a-f]{24}$/);
    const done = await settled(created.id);
    expect(done).toMatchObject({ id: created.id, status: 'completed', background: true, error: null });
    // The simulator's default answer: 16 one-token words.
    expect(done.output_text.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(done.usage?.output_tokens).toBe(DEFAULT_CONTENT_TOKENS);
    // The same dispatch path as a foreground turn: one usage row, under the response's id.
    ledger ??= openUsageDb(suite.gw.dbPath);
    const row = await ledger.waitForRow(created.id);
    expect(row).toMatchObject({ route: 'chat', status: 'completed', prompt_tokens: done.usage?.input_tokens, completion_tokens: done.usage?.output_tokens });
    const [delivery] = await receiver.waitFor(1);
    expect(delivery?.body).toMatchObject({ type: 'response.completed', data: { id: created.id } });
    // input_items are there from the start.
    const items = await client().responses.inputItems.list(created.id);
    expect(items.data).toHaveLength(1);
  });

  it('shows in_progress while the model works, and cancel aborts the upstream call and answers cancelled (again on a second cancel)', async () => {
    const created = await client().responses.create({ model: 'model-held', input: 'take your time', background: true });
    expect(created.status).toBe('queued');
    const upstream = await held.next();
    expect(JSON.parse(upstream.body)).toMatchObject({ model: 'held-model', messages: [{ role: 'user', content: 'take your time' }] });
    expect((await client().responses.retrieve(created.id)).status).toBe('in_progress');
    // Nothing to continue from yet.
    const chained = await call(responsesUrl(), { key: suite.keys.full, body: { model: 'model-chat', input: 'and then?', previous_response_id: created.id } });
    expectEnvelope(chained, 400, 'invalid_request', 'previous_response_id');
    // Created without stream: there are no events to follow, running or not.
    expectEnvelope(await call(`${responsesUrl()}/${created.id}?stream=true`, { key: suite.keys.full }), 400, 'invalid_request', 'stream');
    const cancelled = await client().responses.cancel(created.id);
    expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled', background: true });
    await upstream.abandoned;
    expect((await client().responses.retrieve(created.id)).status).toBe('cancelled');
    expect((await client().responses.cancel(created.id)).status).toBe('cancelled');
    ledger ??= openUsageDb(suite.gw.dbPath);
    expect((await ledger.waitForRow(created.id)).status).toBe('aborted');
  });

  it('fails a turn the gateway refuses with the error in Responses terms (max_output_tokens, not max_tokens)', async () => {
    const created = await client().responses.create({ model: 'model-small', input: 'word '.repeat(400), max_output_tokens: 200, background: true });
    const done = await settled(created.id);
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('context_length_exceeded');
    expect(done.error?.message).toContain('max_output_tokens asks for 200');
    expect(done.error?.message).not.toMatch(/max_tokens|messages/);
    // Its event is awaited here, so that it cannot arrive during the next test.
    await deliveryOf('response.failed', created.id);
  });

  it('fails with the upstream error as the Response error, and emits response.failed', async () => {
    const created = await client().responses.create({ model: 'model-held', input: 'refuse me', background: true });
    (await held.next()).answer(400, { error: { message: 'The model server refused this.', type: 'invalid_request_error', code: null, param: null } });
    const done = await settled(created.id);
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toContain('refused');
    expect(await deliveryOf('response.failed', created.id)).toMatchObject({ type: 'response.failed', data: { id: created.id } });
  });

  it('streams a completed background turn with every event in order, then replays from starting_after', async () => {
    const stream = await client().responses.create({ model: 'model-chat', input: 'stream me a story', background: true, stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const last = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    const id = last.response.id;
    const replay = await client().responses.retrieve(id, { stream: true, starting_after: 3 });
    const again: ResponseStreamEvent[] = [];
    for await (const event of replay) again.push(event);
    expect(again.map((e) => e.sequence_number)).toEqual(events.slice(4).map((e) => e.sequence_number));
    expect(again.at(-1)).toEqual(last);
    expect(events[0]).toMatchObject({ type: 'response.created', response: { status: 'queued', background: true } });
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    const stored = await client().responses.retrieve(id);
    expect(stored).toMatchObject({ status: 'completed', background: true });
    expect(stored.output_text).toBe(deltas);
  });
});

describe('what background refuses', () => {
  it('refuses store: false, a zero-data-retention workspace, and cancelling a synchronous or finished response', async () => {
    const key = suite.keys.full;
    expectEnvelope(await call(responsesUrl(), { key, body: { model: 'model-chat', input: 'x', background: true, store: false } }), 400, 'invalid_request', 'background');
    expectEnvelope(await call(responsesUrl(), { key, headers: { 'X-Workspace-Id': WS_C }, body: { model: 'model-chat', input: 'x', background: true } }), 400, 'retention_not_permitted', 'background');
    const sync = await call(responsesUrl(), { key, body: { model: 'model-chat', input: 'x' } });
    const syncId = (sync.body as { id: string }).id;
    const cancelSync = await call(`${responsesUrl()}/${syncId}/cancel`, { method: 'POST', key });
    expectEnvelope(cancelSync, 400, 'invalid_request', null);
    expect((cancelSync.body as { error: { message: string } }).error.message).toContain('synchronous');
    const created = await client().responses.create({ model: 'model-chat', input: 'x', background: true });
    await settled(created.id);
    const cancelDone = await call(`${responsesUrl()}/${created.id}/cancel`, { method: 'POST', key });
    expectEnvelope(cancelDone, 400, 'invalid_request', null);
    expect((cancelDone.body as { error: { message: string } }).error.message).toContain('already completed');
    expectEnvelope(await call(`${responsesUrl()}/resp_000000000000000000000000/cancel`, { method: 'POST', key }), 404, 'response_not_found', null);
  });

  it('refuses stream retrieval of a response that was not a streamed background one, and a bad starting_after', async () => {
    const key = suite.keys.full;
    const created = await client().responses.create({ model: 'model-chat', input: 'x', background: true });
    await settled(created.id);
    expectEnvelope(await call(`${responsesUrl()}/${created.id}?stream=true`, { key }), 400, 'invalid_request', 'stream');
    expectEnvelope(await call(`${responsesUrl()}/${created.id}?stream=true&starting_after=abc`, { key }), 400, 'invalid_query', 'starting_after');
    expectEnvelope(await call(`${responsesUrl()}/${created.id}?stream=maybe`, { key }), 400, 'invalid_query', 'stream');
  });
});
