/**
 * What a turn is billed, and what the client is told, when the model server reports no usage (SPEC
 * `stream_options`: "Usage is always tracked for billing"; docs/decisions.md "Usage the model server did
 * not report"). Regressions: a 500-word answer without `usage` was answered and billed 0 completion
 * tokens; a stream was estimated at one token per chunk, so one 500-word chunk (or one of 3 MB) billed 1;
 * a stream with `include_usage: true` ended with no usage chunk; a buffered turn that timed out billed no
 * prompt while a streamed one billed its estimate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT, testConfig } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { startHeldUpstream, type HeldUpstream } from '../helpers/held-upstream.js';
import { chunkEvent, useScriptedSuite } from '../helpers/scripted-upstream.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

const suite = useScriptedSuite();

/** 500 words, 3,000 characters: about 750 tokens at 4 characters a token. */
const ANSWER = Array.from({ length: 500 }, (_, i) => (i === 0 ? 'words' : ' words')).join('');
const PROMPT = 'Please write five hundred words about billing.';

const completionWithoutUsage = (content: string) =>
  JSON.stringify({
    id: 'up',
    object: 'chat.completion',
    created: 1700000000,
    model: 'up',
    choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
  });
const contentEvent = (content: string) =>
  chunkEvent(`,"choices":[{"index":0,"delta":{"role":"assistant","content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null}]`);
const STOP = chunkEvent(',"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]');
const DONE = 'data: [DONE]\n\n';

const chat = (body: Record<string, unknown> = {}) =>
  call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: PROMPT }], ...body } });
const rowOf = (res: { headers: Headers }) => suite.ledger.waitForRow(res.headers.get('x-request-id') ?? '');

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

describe('a buffered answer without usage', () => {
  it('carries the estimate in its usage object, equal to the row marked estimated', async () => {
    suite.upstream.answer({ body: completionWithoutUsage(ANSWER) });
    const res = await chat();
    expect(res.status).toBe(200);
    const usage = (res.body as { usage: Usage }).usage;
    expect(usage.completion_tokens).toBeGreaterThan(500);
    expect(usage.completion_tokens).toBeLessThan(1000);
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(await rowOf(res)).toMatchObject({ status: 'completed', usage_source: 'estimated', prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens });
  });

  it('reports the estimate on the Responses API too', async () => {
    suite.upstream.answer({ body: completionWithoutUsage(ANSWER) });
    const res = await call(`${suite.gw.url}/${PROJECT}/chat/v1/responses`, { key: suite.keys.full, body: { model: 'client-model', input: PROMPT } });
    expect(res.status).toBe(200);
    const usage = (res.body as { usage: { input_tokens: number; output_tokens: number } }).usage;
    expect(usage.output_tokens).toBeGreaterThan(500);
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(await rowOf(res)).toMatchObject({ usage_source: 'estimated', completion_tokens: usage.output_tokens });
  });

  it('is billed the same as the same text streamed in one chunk', async () => {
    suite.upstream.answer({ body: completionWithoutUsage(ANSWER) });
    const buffered = await rowOf(await chat());
    suite.upstream.answer({ body: contentEvent(ANSWER) + STOP + DONE });
    const streamed = await rowOf(await chat({ stream: true }));
    expect(streamed.completion_tokens).toBe(buffered.completion_tokens);
    expect(streamed.prompt_tokens).toBe(buffered.prompt_tokens);
  });
});

describe('a stream without usage', () => {
  it('bills one 500-word chunk by its text, not as one token', async () => {
    suite.upstream.answer({ body: contentEvent(ANSWER) + STOP + DONE });
    const res = await chat({ stream: true });
    expect(String(res.body)).toContain('data: [DONE]');
    const row = await rowOf(res);
    expect(row).toMatchObject({ status: 'completed', usage_source: 'estimated' });
    expect(row.completion_tokens).toBeGreaterThan(500);
    expect(row.completion_tokens).toBeLessThan(1000);
  });

  it('bills one 3 MB chunk by its text', async () => {
    const big = 'x'.repeat(3 * 1024 * 1024);
    suite.upstream.answer({ body: contentEvent(big) + STOP + DONE });
    const row = await rowOf(await chat({ stream: true }));
    expect(row.completion_tokens).toBeGreaterThan(700_000);
  });

  it('still counts a stream of one word per chunk as one token a chunk', async () => {
    suite.upstream.answer({ body: contentEvent('Hello') + contentEvent(' there') + contentEvent(' friend') + STOP + DONE });
    const row = await rowOf(await chat({ stream: true }));
    expect(row.completion_tokens).toBe(3);
  });

  it('ends with the estimated usage chunk before [DONE] when the client asked include_usage', async () => {
    suite.upstream.answer({ body: contentEvent(ANSWER) + STOP + DONE });
    const res = await chat({ stream: true, stream_options: { include_usage: true } });
    const frames = parseSse(String(res.body));
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const last = chunksOf(frames.slice(0, -1)).at(-1) as { choices: unknown[]; usage?: Usage; object: string; service_tier: string };
    expect(last).toMatchObject({ object: 'chat.completion.chunk', choices: [], service_tier: 'default' });
    const row = await rowOf(res);
    expect(row.usage_source).toBe('estimated');
    expect(last.usage).toMatchObject({ prompt_tokens: row.prompt_tokens, completion_tokens: row.completion_tokens, total_tokens: row.prompt_tokens + row.completion_tokens });
    expect(row.completion_tokens).toBeGreaterThan(500);
  });

  it('sends no usage chunk when the client did not ask for one', async () => {
    suite.upstream.answer({ body: contentEvent(ANSWER) + STOP + DONE });
    const res = await chat({ stream: true });
    expect(chunksOf(parseSse(String(res.body))).every((c) => c.usage === undefined)).toBe(true);
  });
});

describe('a buffered turn that times out', () => {
  let held: HeldUpstream;
  let slowGw: GatewayProcess;
  let slowLedger: UsageDb;

  beforeAll(async () => {
    held = await startHeldUpstream();
    slowGw = await startGatewayProcess(testConfig(held.url, suite.keys));
    slowLedger = openUsageDb(slowGw.dbPath);
  });

  afterAll(async () => {
    slowLedger?.close();
    await slowGw?.stop();
    await held?.close();
  });

  it('bills the estimated prompt, as a streamed turn cut by its deadline does', async () => {
    const pending = call(`${slowGw.url}/${PROJECT}/slow/v1/chat/completions`, { key: suite.keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: PROMPT }] } });
    await held.next();
    const res = await pending;
    expect(res.status).toBe(408);
    const row = await slowLedger.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 'timeout', completion_tokens: 0, usage_source: 'estimated' });
    expect(row.prompt_tokens).toBeGreaterThan(0);
  });
});
