/**
 * An endpoint whose model server speaks the Responses API itself (`upstream.api: responses`,
 * docs/decisions.md "Upstream Responses API"), against the bundled simulator's /v1/responses: the client's
 * bytes reach the server with only `model` replaced, the answer comes back as the server wrote it
 * (buffered, or its SSE events in order), and the ledger charges the usage the server reported.
 */
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { makeKeys, PROJECT, testConfig, WS_C } from '../helpers/configs.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { serveUntilExit, startGatewayProcess, startSimulatorProcess, tempDir, writeConfig } from '../helpers/processes.js';
import { lastSimRequest, simSeq } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import { useProcesses } from '../helpers/suite.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

const RESP_ID = 'a0000000-0000-4000-8000-0000000000c1';

function passthroughEndpoint(upstream: string): Record<string, unknown> {
  return {
    id: RESP_ID,
    slug: 'resp',
    name: 'Responses server',
    kind: 'chat',
    tier: 'gpu',
    model: { id: 'model-resp', context_window: 8192 },
    upstream: { base_url: upstream, model: 'sim-chat', api: 'responses' },
  };
}

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys);
  (config.projects[0]?.endpoints as unknown[]).push(passthroughEndpoint(sim.url));
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys, config };
});

let usageDb: UsageDb | null = null;
const ledger = (): UsageDb => (usageDb ??= openUsageDb(suite.gw.dbPath));
const direct = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/resp/v1`, apiKey: suite.keys.full, maxRetries: 0 });
const project = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/v1`, apiKey: suite.keys.full, maxRetries: 0 });
const url = (): string => `${suite.gw.url}/${PROJECT}/resp/v1/responses`;

function postRaw(raw: string): Promise<Response> {
  return fetch(url(), { method: 'POST', headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' }, body: raw });
}

function expectEnvelope(res: JsonResponse, status: number, code: string, param: string | null): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code, param } } });
  expect(Object.keys(res.body as object)).toEqual(['error']);
}

/** Ids and times differ between two runs of the same turn; everything else is the server's own bytes. */
const normalized = (sse: string): string => sse.replace(/(resp|msg|fc)_sim\d+/g, '$1_X').replace(/"created_at":\d+/g, '"created_at":0');

describe('upstream.api: responses', () => {
  it('passes a buffered request through to /v1/responses and answers with the server Response, charging its usage', async () => {
    const before = await simSeq(suite.sim.url);
    const { data, response } = await project().responses.create({ model: 'model-resp', input: 'Say hello', instructions: 'Be brief.', max_output_tokens: 40 }).withResponse();
    expect(data).toMatchObject({ object: 'response', status: 'completed', model: 'sim-chat' });
    expect(data.output_text.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(await simSeq(suite.sim.url)).toBe(before + 1);
    const received = await lastSimRequest(suite.sim.url);
    expect(received.path).toBe('/v1/responses');
    expect(JSON.parse(received.body)).toEqual({ model: 'sim-chat', input: 'Say hello', instructions: 'Be brief.', max_output_tokens: 40 });
    const row = await ledger().waitForRow(response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ endpoint_id: RESP_ID, route: 'chat', status: 'completed', usage_source: 'upstream', prompt_tokens: data.usage?.input_tokens, completion_tokens: data.usage?.output_tokens });
  });

  it('sends the client bytes exactly, but for model, including fields the gateway does not know', async () => {
    const raw = '{ "model" :  "client-name", "input": [{"role": "user", "content": [{"type": "input_text", "text": "caf\\u00e9 \u2713"}]}],\n "x_vendor": {"keep": [1, 2.50, "me"]}, "metadata": {"team": "a"}, "sim": {"tokens": 3} }';
    const res = await postRaw(raw);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; output: { content: { text: string }[] }[] };
    expect(body.status).toBe('completed');
    expect(body.output[0]?.content[0]?.text.split(' ').length).toBe(3);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(raw.replace('"client-name"', '"sim-chat"'));
  });

  it('streams the server events through in order and unchanged, and charges the usage of response.completed', async () => {
    const stream = await direct().responses.create({ model: 'anything', input: 'Stream a story', stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBe(16);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(completed.response.output_text ?? deltas).toBe(deltas);

    // Byte for byte what the server writes for the same body (ids and times aside).
    const body = '{"model":"anything","input":"Stream a story","stream":true}';
    const viaGateway = await postRaw(body);
    const requestId = viaGateway.headers.get('x-request-id') ?? '';
    const text = await viaGateway.text();
    const straight = await fetch(`${suite.sim.url}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body.replace('"anything"', '"sim-chat"') });
    expect(normalized(text)).toBe(normalized(await straight.text()));
    const final = parseSse(text).at(-1);
    const usage = (JSON.parse(final?.data ?? '{}') as { response: { usage: { input_tokens: number; output_tokens: number } } }).response.usage;
    const row = await ledger().waitForRow(requestId);
    expect(row).toMatchObject({ status: 'completed', usage_source: 'upstream', prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens });
  });

  it('refuses background, a non-boolean stream and stored data in a zero-data-retention workspace; upstream errors keep the envelope', async () => {
    const key = suite.keys.full;
    expectEnvelope(await call(url(), { key, body: { model: 'm', input: 'x', background: true } }), 400, 'unsupported_value', 'background');
    expectEnvelope(await call(url(), { key, body: { model: 'm', input: 'x', stream: 'yes' } }), 400, 'invalid_request', 'stream');
    expectEnvelope(await call(url(), { key, headers: { 'X-Workspace-Id': WS_C }, body: { model: 'm', input: 'x', store: true } }), 400, 'retention_not_permitted', 'store');
    expectEnvelope(await call(`${suite.gw.url}/${PROJECT}/v1/responses`, { key, body: { input: 'x' } }), 400, 'invalid_request', 'model');
    const refused = await call(url(), { key, body: { model: 'm', input: 'x', sim: { error_status: 400 } } });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body as object)).toEqual(['error']);
  });

  it('is refused in the config file on an endpoint that is not a chat endpoint', async () => {
    const dir = tempDir();
    const config = testConfig('http://127.0.0.1:9/v1', makeKeys());
    const endpoints = config.projects[0]?.endpoints as unknown as { kind: string; upstream: Record<string, unknown> }[];
    const at = endpoints.findIndex((e) => e.kind === 'embedding');
    (endpoints[at] as { upstream: Record<string, unknown> }).upstream.api = 'responses';
    const result = await serveUntilExit(['--config', writeConfig(dir, config), '--db', `${dir}/s.db`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`projects[0].endpoints[${at}].upstream.api`);
  });
});
