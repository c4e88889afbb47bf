/**
 * The shape of a decomposed multimodel answer against SPEC "Chat completion response" (probe items A3, A4,
 * A5, B3): the reasoning channel, the full usage object, system_fingerprint only on the buffered body, and
 * the resolved service lane, reported and billed. Its own project: a reasoning endpoint (`think`, the
 * simulator's sim-reasoner) for mathematics and a plain one for recipes, so a plan's steps can be sent to
 * one or the other by meaning (src/simulator/planner.ts scripts the plan with `[plan: ...]`).
 */
import { describe, expect, it } from 'vitest';
import { call, type JsonResponse } from '../helpers/http.js';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { simRequests, simSeq } from '../helpers/simulator-log.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { useProcesses } from '../helpers/suite.js';
import { openUsageDb } from '../helpers/usage-db.js';

const PROJECT = 'proj_mmanswer';
const WS = 'ws_f6f6f6';
const THINK = 'b0000000-0000-4000-8000-000000000001';
const PLAIN = 'b0000000-0000-4000-8000-000000000002';
const EMBED = 'b0000000-0000-4000-8000-000000000003';
const REASONING_TOKENS = 3;
const CONTENT_TOKENS = 5;

function project(upstream: string, key: string) {
  const chat = (id: string, slug: string, model: Record<string, unknown>, upstreamModel: string, router: Record<string, unknown>) => ({
    id,
    slug,
    name: `Answer ${slug}`,
    kind: 'chat',
    tier: 'gpu',
    workspaces: [WS],
    model: { id: `model-${slug}`, context_window: 8192, capabilities: ['tools'], ...model },
    upstream: { base_url: upstream, model: upstreamModel },
    router,
  });
  return {
    id: PROJECT,
    slug: 'mmanswer',
    default_workspace: WS,
    workspaces: [{ id: WS, name: 'Main' }],
    endpoints: [
      chat(THINK, 'think', { reasoning: ['low', 'medium', 'high'] }, 'sim-reasoner', {
        description: 'Mathematics: algebra, calculus, derivatives, integrals and equations',
        examples: ['compute the derivative of sin x', 'what is the integral of x squared', 'solve the equation 2x + 3 = 7'],
      }),
      chat(PLAIN, 'plain', {}, 'sim-chat', {
        description: 'Casual conversation: greetings, recipes, cooking and travel plans',
        examples: ['recommend a recipe for dinner tonight', 'plan a weekend trip to lisbon'],
      }),
      { id: EMBED, slug: 'embed', name: 'Embeddings', kind: 'embedding', tier: 'cpu', model: { id: 'sim-embed', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-embed' } },
    ],
    keys: [{ value: key, scopes: ['inference', 'management'] }],
  };
}

const suite = useProcesses(async (): Promise<{ sim: SimulatorProcess; gw: GatewayProcess; key: string }> => {
  const key = mintTestKey('mmanswer');
  const sim = await startSimulatorProcess();
  const gw = await startGatewayProcess(testConfig(sim.url, makeKeys(), { extraProjects: [project(sim.url, key)] }));
  return { sim, gw, key };
});

const url = (): string => `${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions/multimodel`;
const sim = { reasoning_tokens: REASONING_TOKENS, tokens: CONTENT_TOKENS };
const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'client-model', messages: [{ role: 'user', content }], sim, ...extra });
const multimodel = (body: object): Promise<JsonResponse> => call(url(), { key: suite.key, body });
const stream = async (body: object): Promise<Record<string, unknown>[]> => {
  const res = await fetch(url(), { method: 'POST', headers: { authorization: `Bearer ${suite.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
  expect(res.status).toBe(200);
  return chunksOf(parseSse(await res.text())) as Record<string, unknown>[];
};

interface Message {
  content: string | null;
  reasoning?: string;
  reasoning_content?: string;
}
interface Completion {
  choices: { message: Message }[];
  usage: Record<string, unknown> & { completion_tokens: number; completion_tokens_details: { reasoning_tokens: number | null } };
  service_tier: string;
  x_multimodel: { subtasks: number; dispatches: number };
  [field: string]: unknown;
}
type Delta = Record<string, unknown> & { content?: string; reasoning?: string; reasoning_content?: string };
const deltas = (chunks: Record<string, unknown>[]): Delta[] => chunks.flatMap((c) => ((c.choices ?? []) as { delta: Delta }[]).map((ch) => ch.delta));

// Routing by meaning: sub-task 1 is the first sentence, sub-task 2 (the terminal one) the second.
const MATH_THEN_RECIPE = 'compute the derivative of sin x. recommend a recipe for dinner tonight.';
const RECIPE_THEN_MATH = 'recommend a recipe for dinner tonight. compute the derivative of sin x.';
const MATH_ONLY = 'compute the derivative of sin x. [plan: steps=1]';

describe('A5: system_fingerprint', () => {
  it('is null on the buffered body and absent from every streamed chunk, the usage chunk included', async () => {
    const res = await multimodel(ask('recommend a recipe. [plan: steps=2]'));
    expect(res.status).toBe(200);
    expect(res.body).toHaveProperty('system_fingerprint', null);
    const chunks = await stream(ask('recommend a recipe. [plan: steps=2]', { stream_options: { include_usage: true } }));
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.at(-1)).toHaveProperty('usage');
    for (const c of chunks) expect(c).not.toHaveProperty('system_fingerprint');
  });
});

describe('A4: the usage object', () => {
  const nonReasoning = {
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: null },
    completion_tokens_details: { reasoning_tokens: null, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
  };

  it('has every SPEC field, reasoning_tokens null when no reasoning model took part, buffered and streamed', async () => {
    const res = await multimodel(ask('recommend a recipe for dinner tonight. [plan: steps=2]'));
    expect(res.status).toBe(200);
    const body = res.body as Completion;
    expect(body.usage).toMatchObject({ ...nonReasoning, completion_tokens: 2 * CONTENT_TOKENS });
    expect(body.usage.total_tokens).toBe((body.usage.prompt_tokens as number) + body.usage.completion_tokens);

    const chunks = await stream(ask('recommend a recipe for dinner tonight. [plan: steps=2]', { stream_options: { include_usage: true } }));
    expect(chunks.at(-1)?.usage).toMatchObject({ ...nonReasoning, completion_tokens: 2 * CONTENT_TOKENS });
  });

  it('sums what the reasoning models reported when one took part', async () => {
    const res = await multimodel(ask(MATH_THEN_RECIPE));
    expect(res.status).toBe(200);
    const body = res.body as Completion;
    expect(body.x_multimodel.dispatches).toBe(2);
    expect(body.usage.completion_tokens_details).toEqual({ reasoning_tokens: REASONING_TOKENS, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null });
    expect(body.usage.completion_tokens).toBe(2 * CONTENT_TOKENS + REASONING_TOKENS);
  });
});

describe('A3: the reasoning channel', () => {
  it('returns the answering dispatch reasoning on message.reasoning and message.reasoning_content', async () => {
    const res = await multimodel(ask(MATH_ONLY));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('think');
    const message = (res.body as Completion).choices[0]?.message as Message;
    expect(typeof message.reasoning).toBe('string');
    expect((message.reasoning ?? '').length).toBe(19);
    expect(message.reasoning_content).toBe(message.reasoning);
    expect(message.content).not.toContain(message.reasoning ?? '\u0000');
  });

  it('streams the reasoning as reasoning and reasoning_content deltas ahead of the first content delta', async () => {
    const all = deltas(await stream(ask(MATH_ONLY)));
    const firstReasoning = all.findIndex((d) => typeof d.reasoning === 'string' && d.reasoning.length > 0);
    const firstContent = all.findIndex((d) => typeof d.content === 'string' && d.content.length > 0);
    expect(firstReasoning).toBeGreaterThanOrEqual(0);
    expect(firstContent).toBeGreaterThan(firstReasoning);
    const reasoning = all[firstReasoning] as Delta;
    expect(reasoning.reasoning_content).toBe(reasoning.reasoning);
  });

  it('returns the reasoning of the dispatch whose answer the client receives, not of an earlier step', async () => {
    // Terminal step on the reasoning model: its reasoning is the answer's.
    const terminalThinks = (await multimodel(ask(RECIPE_THEN_MATH))).body as Completion;
    expect(typeof terminalThinks.choices[0]?.message.reasoning).toBe('string');
    // Only the first step reasoned: billed, but the answer (the plain model's) has no reasoning of its own.
    const firstThinks = (await multimodel(ask(MATH_THEN_RECIPE))).body as Completion;
    expect(firstThinks.usage.completion_tokens_details.reasoning_tokens).toBe(REASONING_TOKENS);
    expect(firstThinks.choices[0]?.message).not.toHaveProperty('reasoning');
    expect(firstThinks.choices[0]?.message).not.toHaveProperty('reasoning_content');
  });

  it('omits the reasoning under reasoning.exclude or include_reasoning false, and still bills it', async () => {
    for (const extra of [{ reasoning: { exclude: true } }, { include_reasoning: false }]) {
      const body = (await multimodel(ask(MATH_ONLY, extra))).body as Completion;
      expect(body.choices[0]?.message).not.toHaveProperty('reasoning');
      expect(body.choices[0]?.message).not.toHaveProperty('reasoning_content');
      expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(REASONING_TOKENS);
      const streamed = deltas(await stream(ask(MATH_ONLY, extra)));
      expect(streamed.some((d) => 'reasoning' in d || 'reasoning_content' in d)).toBe(false);
    }
  });
});

describe('B3: service_tier', () => {
  it('reports the resolved lane, buffered and on every chunk, and bills every dispatch in it', async () => {
    const res = await multimodel(ask('recommend a recipe. [plan: steps=2]', { service_tier: 'flex' }));
    expect(res.status).toBe(200);
    expect((res.body as Completion).service_tier).toBe('flex');
    const chunks = await stream(ask('recommend a recipe. [plan: steps=2]', { service_tier: 'priority', stream_options: { include_usage: true } }));
    for (const c of chunks) expect(c.service_tier).toBe('priority');
    expect((await multimodel(ask('recommend a recipe. [plan: steps=1]', { service_tier: 'scale' }))).body).toMatchObject({ service_tier: 'default' });

    const ledger = openUsageDb(suite.gw.dbPath);
    try {
      const requestId = res.headers.get('x-request-id') ?? '';
      await ledger.waitForRow(requestId);
      // Both dispatches' rows (written in batches: wait until the second is there too).
      const until = Date.now() + 3000;
      while (ledger.rowsFor(requestId).length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
      const rows = ledger.rowsFor(requestId);
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row).toMatchObject({ service_tier: 'flex', tier_multiplier: 0.5, route: 'router' });
    } finally {
      ledger.close();
    }
  });
});

describe('logprobs', () => {
  interface Entry {
    token: string;
    top_logprobs: unknown[];
  }
  type Logprobs = { content: Entry[] | null; refusal: unknown } | null;
  const logprobsOf = (res: JsonResponse): Logprobs => (res.body as { choices: { logprobs: Logprobs }[] }).choices[0]?.logprobs ?? null;
  const contentOf = (res: JsonResponse): string => String((res.body as Completion).choices[0]?.message.content);

  // Regression: the decomposed answer always said logprobs: null, whatever the client asked.
  it('returns the answering dispatch logprobs, covering exactly the delivered content, buffered and streamed', async () => {
    for (const text of [RECIPE_THEN_MATH, 'recommend a recipe. [plan: steps=3]']) {
      const res = await multimodel(ask(text, { logprobs: true, top_logprobs: 2 }));
      expect(res.status).toBe(200);
      const entries = logprobsOf(res)?.content ?? [];
      expect(entries.map((e) => e.token).join('')).toBe(contentOf(res));
      expect(entries).toHaveLength(CONTENT_TOKENS);
      for (const e of entries) expect(e.top_logprobs).toHaveLength(2);
    }
    const chunks = await stream(ask(RECIPE_THEN_MATH, { logprobs: true }));
    const answer = chunks.flatMap((c) => (c.choices ?? []) as { delta: Delta; logprobs: Logprobs }[]).find((ch) => typeof ch.delta.content === 'string' && ch.delta.content.length > 0);
    expect(answer?.logprobs?.content?.map((e) => e.token).join('')).toBe(answer?.delta.content);
  });

  it('is null without logprobs: true', async () => {
    const res = await multimodel(ask(RECIPE_THEN_MATH));
    expect(res.status).toBe(200);
    expect(logprobsOf(res)).toBeNull();
  });
});

describe('reasoning effort mapping', () => {
  // Regression: a decomposed dispatch forwarded reasoning_effort max as sent to a model listing only
  // low, medium and high (a real model server refuses it), and the answer did not report the mapping.
  it('sends the routed model its mapped level and reports it in x_adjusted_reasoning_effort, buffered and streamed', async () => {
    const before = await simSeq(suite.sim.url);
    const res = await multimodel(ask(MATH_ONLY, { reasoning_effort: 'max' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('think');
    expect(res.body).toMatchObject({ x_adjusted_reasoning_effort: 'high' });
    const dispatched = (await simRequests(suite.sim.url, 20)).filter((r) => r.seq > before && JSON.parse(r.body).model === 'sim-reasoner');
    expect(dispatched.map((r) => (JSON.parse(r.body) as { reasoning_effort?: string }).reasoning_effort)).toEqual(['high']);

    const chunks = await stream(ask(MATH_ONLY, { reasoning: { effort: 'minimal' } }));
    const answer = chunks.find((c) => deltas([c]).some((d) => typeof d.content === 'string' && d.content.length > 0));
    expect(answer).toMatchObject({ x_adjusted_reasoning_effort: 'low' });
  });

  it('reports nothing when the model lists the level sent', async () => {
    const res = await multimodel(ask(MATH_ONLY, { reasoning_effort: 'medium' }));
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('x_adjusted_reasoning_effort');
  });
});
