/**
 * The opt-in agentic harness (SPEC "Passthrough and augmentation rules"; docs/decisions.md "The agentic
 * harness") through real processes: each feature with its header on changes what the simulator receives
 * or what the client gets, and with it off the simulator receives the client's bytes exactly. The
 * simulator's knobs (`sim` in the body, forwarded like any unknown field) make it misbehave on demand.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { lastSimRequest, simRequests, simSeq, type SimRequest } from '../helpers/simulator-log.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { openUsageDb } from '../helpers/usage-db.js';

const suite = useGatewaySuite();

type Json = Record<string, unknown>;
const url = (slug: string): string => `${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`;

async function post(slug: string, raw: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(url(slug), { key: suite.keys.full, headers: { 'content-type': 'application/json', ...headers }, body: raw });
}

/** What reached the model for the last request, parsed. */
async function upstream(): Promise<Json> {
  return JSON.parse((await lastSimRequest(suite.sim.url)).body) as Json;
}

/** The requests the simulator received since `before` (oldest first). */
async function since(before: number): Promise<SimRequest[]> {
  return (await simRequests(suite.sim.url, 20)).filter((r) => r.seq > before).sort((a, b) => a.seq - b.seq);
}

/** Usage rows of a request: `<id>` and the harness's extra turns `<id>.<label>`, by label. */
async function billedTurns(id: string, labels: string[]): Promise<Record<string, number>> {
  const ledger = openUsageDb(suite.gw.dbPath);
  try {
    const rows: Record<string, number> = {};
    for (const label of labels) rows[label] = (await ledger.waitForRow(label === '' ? id : `${id}.${label}`)).completion_tokens;
    return rows;
  } finally {
    ledger.close();
  }
}

const augmented = (res: JsonResponse): string | null => res.headers.get('x-service-augmented');
const firstChoice = (res: JsonResponse): { message: Json; finish_reason: string } => ((res.body as Json).choices as { message: Json; finish_reason: string }[])[0]!;

const tool = (name: string, description: string): Json => ({ type: 'function', function: { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } } } });
const LOOKUP = [tool('lookup', 'Looks a term up')];
const TWELVE_TOOLS = [
  tool('get_weather', 'Weather forecast for a city: temperature, rain and wind tomorrow'),
  tool('get_stock_price', 'Current stock price of a ticker symbol'),
  tool('send_email', 'Sends an email message to a recipient'),
  tool('create_calendar_event', 'Creates a meeting in the calendar'),
  tool('search_web', 'Searches the web for pages'),
  tool('translate_text', 'Translates text between languages'),
  tool('convert_currency', 'Converts an amount between currencies'),
  tool('read_file', 'Reads a file from disk'),
  tool('run_sql', 'Runs an SQL query on the database'),
  tool('book_flight', 'Books a flight between airports'),
  tool('order_pizza', 'Orders a pizza for delivery'),
  tool('play_music', 'Plays a song on the speaker'),
];
const LOG = Array.from({ length: 60 }, () => 'WARN  retrying   connection to db-1     (attempt pending)').join('\n');

/** One body that would trigger every request- and answer-side feature the `chat` endpoint can show. */
const EVERY_FEATURE = JSON.stringify({
  model: 'client-model',
  messages: [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: LOG },
    { role: 'assistant', content: 'Noted.' },
    { role: 'tool', tool_call_id: 'none', content: LOG },
    { role: 'user', content: 'What is the weather forecast in Paris tomorrow?' },
  ],
  tools: TWELVE_TOOLS,
  tool_choice: 'auto',
  max_tokens: 30,
  sim: { tool_call_as_text: true },
});

describe('the faithful floor', () => {
  it('sends a body that would trigger every feature byte for byte when no augmentation header is sent', async () => {
    const res = await post('chat', EVERY_FEATURE);
    expect(res.status).toBe(200);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(EVERY_FEATURE.replace('"client-model"', '"sim-chat"'));
    expect(augmented(res)).toBeNull();
    // The model's text-written call is returned as it wrote it.
    expect(firstChoice(res)).toMatchObject({ finish_reason: 'stop', message: { tool_calls: null } });
    expect(String(firstChoice(res).message.content)).toContain('<tool_call>');
  });

  it('sends the same body byte for byte when every feature header says off', async () => {
    const off = Object.fromEntries(
      ['fanout-nudge', 'compaction', 'tool-top-k', 'max-tokens-floor', 'capability-tool-drop', 'corrective-retries', 'fabricated-tool-calls', 'tool-allowlist', 'tool-choice-demotion', 'max-output-tokens-clamp', 'reasoning-normalization'].map((f) => [`x-service-augment-${f}`, 'off']),
    );
    const res = await post('chat', EVERY_FEATURE, { ...off, 'x-service-augment': 'on', 'x-service-compression': 'off' });
    expect(res.status).toBe(200);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(EVERY_FEATURE.replace('"client-model"', '"sim-chat"'));
    expect(augmented(res)).toBeNull();
  });

  it('reports every feature that acted when the harness is on', async () => {
    const res = await post('chat', EVERY_FEATURE, { 'x-service-augment': 'on', 'x-service-augment-tool-top-k': 'on', 'x-service-augment-tool-top-k-count': '2' });
    expect(res.status).toBe(200);
    expect(augmented(res)?.split(',')).toEqual(['tool-top-k', 'compression', 'max-tokens-floor', 'fabricated-tool-calls']);
    const sent = await upstream();
    expect((sent.tools as Json[]).map((t) => (t.function as Json).name)).toContain('get_weather');
    expect(sent.max_tokens).toBe(256);
  });
});

describe('fan-out nudge', () => {
  it('is a no-op with only client function tools, and the header is never refused', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: TWELVE_TOOLS.slice(0, 3) });
    const res = await post('chat', body, { 'x-service-augment-fanout-nudge': 'on' });
    expect(res.status).toBe(200);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
    expect(augmented(res)).toBeNull();
  });
});

describe('compaction', () => {
  const turns = Array.from({ length: 12 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `Turn ${i}: the quarterly report for region ${i} lists revenue, churn, hiring plans and the open questions we still owe finance.`,
  }));
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, ...turns, { role: 'user', content: 'So what now?' }], max_tokens: 32 });

  it('keeps the 400 when it is off, and nothing reaches the model', async () => {
    const before = await simSeq(suite.sim.url);
    expectError(await post('small', body), 400, 'context_length_exceeded', 'max_tokens');
    expect(await simSeq(suite.sim.url)).toBe(before);
  });

  it('does not act, and sends the bytes as they are, when the request fits', async () => {
    const fits = '{"model":"m","messages":[{"role":"user","content":"short"}],"max_tokens":8}';
    const res = await post('small', fits, { 'x-service-augment-compaction': 'on' });
    expect(res.status).toBe(200);
    expect(augmented(res)).toBeNull();
    expect((await lastSimRequest(suite.sim.url)).body).toBe(fits.replace('"m"', '"sim-chat"'));
  });

  it('summarises the oldest turns through a model call and serves the turn when it is on', async () => {
    const before = await simSeq(suite.sim.url);
    const res = await post('small', body, { 'x-service-augment-compaction': 'on' });
    expect(res.status).toBe(200);
    expect(augmented(res)).toBe('compaction');
    const [summary, turn] = await since(before);
    expect(String(((JSON.parse(summary!.body) as { messages: Json[] }).messages[0] as Json).content)).toMatch(/^Summarise the conversation/);
    const messages = (JSON.parse(turn!.body) as { messages: Json[] }).messages;
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(String(messages[1]?.content)).toMatch(/^Summary of the earlier conversation/);
    expect(messages[2]?.content).toBe('So what now?');
    // The summary is a model turn of its own, billed on its own row.
    const rows = await billedTurns((res.body as Json).id as string, ['compaction', '']);
    expect(rows.compaction).toBe(16);
  });
});

describe('tool top-k', () => {
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'What is the weather forecast in Paris tomorrow, rain or wind?' }], tools: TWELVE_TOOLS, tool_choice: 'auto' });

  it('keeps the k tools most similar to the turn, k from its count header', async () => {
    const res = await post('chat', body, { 'x-service-augment-tool-top-k': 'on', 'x-service-augment-tool-top-k-count': '3' });
    expect(res.status).toBe(200);
    expect(augmented(res)).toBe('tool-top-k');
    const names = ((await upstream()).tools as Json[]).map((t) => (t.function as Json).name);
    expect(names).toHaveLength(3);
    expect(names).toContain('get_weather');
  });

  it('stays off under X-Service-Augment: on', async () => {
    const res = await post('chat', body, { 'x-service-augment': 'on' });
    expect(res.status).toBe(200);
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });
});

describe('max_tokens floor', () => {
  const body = '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16}';

  it('raises a tiny max_tokens to the floor when on', async () => {
    const res = await post('chat', body, { 'x-service-augment-max-tokens-floor': 'on' });
    expect(augmented(res)).toBe('max-tokens-floor');
    expect((await upstream()).max_tokens).toBe(256);
  });

  it('sends it as it is when off', async () => {
    await post('chat', body, { 'x-service-augment-max-tokens-floor': 'off' });
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });
});

describe('capability tool-drop', () => {
  const body = JSON.stringify({
    model: 'm',
    messages: [
      { role: 'user', content: 'look it up' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'found' },
      { role: 'user', content: 'thanks' },
    ],
    tools: LOOKUP,
  });

  it('keeps the 400 unsupported_parameter on a model without tool calling when off', async () => {
    expectError(await post('plain', body), 400, 'unsupported_parameter', 'tools');
  });

  it('drops the tools and keeps the history as text when on', async () => {
    const res = await post('plain', body, { 'x-service-augment-capability-tool-drop': 'on' });
    expect(res.status).toBe(200);
    expect(augmented(res)).toBe('capability-tool-drop');
    const sent = await upstream();
    expect(sent.tools).toBeUndefined();
    expect(sent.messages).toEqual([
      { role: 'user', content: 'look it up' },
      { role: 'assistant', content: '[called lookup({"q":"x"})]' },
      { role: 'user', content: '[result of lookup] found' },
      { role: 'user', content: 'thanks' },
    ]);
  });
});

describe('corrective retries', () => {
  const body = (extra: Json = {}): string => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'look up x' }], tools: LOOKUP, sim: { malformed_tool_calls: 1 }, ...extra });

  it('retries a malformed tool call as an extra billed turn and returns the good call', async () => {
    const before = await simSeq(suite.sim.url);
    const res = await post('chat', body(), { 'x-service-augment-corrective-retries': 'on' });
    expect(res.status).toBe(200);
    expect(augmented(res)).toBe('corrective-retries');
    expect(firstChoice(res).finish_reason).toBe('tool_calls');
    const calls = firstChoice(res).message.tool_calls as { function: { arguments: string } }[];
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ q: 'sample' });
    const sent = await since(before);
    expect(sent).toHaveLength(2);
    const retry = (JSON.parse(sent[1]!.body) as { messages: Json[] }).messages;
    expect(retry.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    // Usage covers both turns (the simulator bills 10 completion tokens per tool call).
    expect((res.body as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(20);
    expect(await billedTurns((res.body as Json).id as string, ['', 't2'])).toEqual({ '': 10, t2: 10 });
  });

  it('streams the corrected answer as chunks', async () => {
    const res = await fetch(url('chat'), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'x-service-augment-corrective-retries': 'on' },
      body: body({ stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.headers.get('x-service-augmented')).toBe('corrective-retries');
    const chunks = chunksOf(parseSse(await res.text()));
    const finish = chunks.flatMap((c) => (c.choices as Json[]).map((ch) => ch.finish_reason)).filter((f) => f !== null);
    expect(finish).toEqual(['tool_calls']);
    expect(JSON.stringify(chunks)).toContain(JSON.stringify('{"q":"sample"}'));
    expect((chunks.at(-1)?.usage as { completion_tokens: number }).completion_tokens).toBe(20);
  });

  it('ends with finish_reason length when max_tokens is spent before a good call', async () => {
    const before = await simSeq(suite.sim.url);
    // Only this feature: under X-Service-Augment: on the max_tokens floor would raise the cap first.
    const res = await post('chat', body({ max_tokens: 10 }), { 'x-service-augment-corrective-retries': 'on' });
    expect(firstChoice(res)).toMatchObject({ finish_reason: 'length', message: { tool_calls: null } });
    expect(await since(before)).toHaveLength(1);
  });

  it('returns the malformed call as the model made it, in one turn, when off', async () => {
    const before = await simSeq(suite.sim.url);
    const res = await post('chat', body());
    expect(firstChoice(res).finish_reason).toBe('tool_calls');
    expect(() => JSON.parse((firstChoice(res).message.tool_calls as { function: { arguments: string } }[])[0]!.function.arguments)).toThrow();
    const sent = await since(before);
    expect(sent.map((r) => r.body)).toEqual([body().replace('"m"', '"sim-chat"')]);
  });
});

describe('fabricated tool calls', () => {
  const body = (extra: Json = {}): string => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'look up x' }], tools: LOOKUP, sim: { tool_call_as_text: true }, ...extra });

  it('turns a tool call written as text into a real tool call', async () => {
    const res = await post('chat', body(), { 'x-service-augment-fabricated-tool-calls': 'on' });
    expect(augmented(res)).toBe('fabricated-tool-calls');
    expect(firstChoice(res)).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: '{"q":"sample"}' } }] } });
  });

  it('streams the repaired answer as chunks', async () => {
    const res = await fetch(url('chat'), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'x-service-augment': 'on' },
      body: body({ stream: true }),
    });
    expect(res.headers.get('x-service-augmented')).toBe('fabricated-tool-calls');
    const chunks = chunksOf(parseSse(await res.text()));
    const finish = chunks.flatMap((c) => (c.choices as Json[]).map((ch) => ch.finish_reason)).filter((f) => f !== null);
    expect(finish).toEqual(['tool_calls']);
    expect(JSON.stringify(chunks)).toContain('"name":"lookup"');
  });

  it('leaves the text as the model wrote it when off', async () => {
    const res = await post('chat', body());
    expect(firstChoice(res)).toMatchObject({ finish_reason: 'stop', message: { tool_calls: null } });
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body().replace('"m"', '"sim-chat"'));
  });
});

describe('chat tool allowlist', () => {
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'clean up' }], tools: LOOKUP, sim: { undeclared_tool: 'rm_rf' } });

  it('removes a call on a tool the request did not declare', async () => {
    const res = await post('chat', body, { 'x-service-augment-tool-allowlist': 'on' });
    expect(augmented(res)).toBe('tool-allowlist');
    expect(firstChoice(res)).toMatchObject({ finish_reason: 'stop', message: { content: '', tool_calls: null } });
  });

  it('returns it as the model made it when off', async () => {
    const res = await post('chat', body);
    expect(firstChoice(res).finish_reason).toBe('tool_calls');
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });
});

describe('tool-choice demotion', () => {
  const body = JSON.stringify({
    model: 'm',
    messages: [
      { role: 'user', content: 'look up x' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'x is 42' },
    ],
    tools: LOOKUP,
    tool_choice: 'required',
  });

  it('demotes a forced tool choice to auto after a tool result', async () => {
    const res = await post('chat', body, { 'x-service-augment-tool-choice-demotion': '1' });
    expect(augmented(res)).toBe('tool-choice-demotion');
    expect((await upstream()).tool_choice).toBe('auto');
  });

  it('forwards the forced choice when off', async () => {
    await post('chat', body, { 'x-service-augment-tool-choice-demotion': '0' });
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });
});

describe('X-Service-Compression', () => {
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'tool', tool_call_id: 't', content: LOG }, { role: 'user', content: `Why does this repeat?\n${LOG}` }] });

  it('compresses long repetitive context on its way to the model', async () => {
    const res = await post('chat', body, { 'x-service-compression': 'on' });
    expect(augmented(res)).toBe('compression');
    const sent = (await upstream()).messages as Json[];
    expect(String(sent[0]?.content)).toContain('[previous line repeated 59 more times]');
    expect(JSON.stringify(sent).length).toBeLessThan(body.length / 5);
  });

  it('sends the context as it is when off', async () => {
    await post('chat', body, { 'x-service-compression': 'no' });
    expect((await lastSimRequest(suite.sim.url)).body).toBe(body.replace('"m"', '"sim-chat"'));
  });
});
