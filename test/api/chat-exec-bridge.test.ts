/**
 * The chat tool bridge (issue 13, docs/exec.md "Chat tool bridge") through real processes: the simulator
 * as the model (it calls the first tool offered, then answers a tool result in prose), a scripted agent
 * over a real WebSocket running the invocations, the gateway's own ledger for the billing rows, and the
 * simulator's request log as the proof of what each upstream turn carried.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { eventually, mintJoinKey } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { simRequests, simSeq, type SimRequest } from '../helpers/simulator-log.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

const keys = makeKeys();
/** inference + execution: may use x_exec. */
const bridgeKey = mintTestKey('test');
const NO_DEFAULT = 'proj_nodefault';
const noDefaultKey = mintTestKey('nodefault');
let sim: SimulatorProcess;
let gw: GatewayProcess;
let ledger: UsageDb;
let agent: TestAgent;

type Json = Record<string, unknown>;
interface Completion {
  id: string;
  choices: { message: { content: string | null; tool_calls: { id: string; function: { name: string; arguments: string } }[] | null }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

beforeAll(async () => {
  sim = await startSimulatorProcess();
  const base = testConfig(sim.url, keys, {
    extraKeys: [{ value: bridgeKey, scopes: ['inference', 'execution'] }],
    extraProjects: [
      {
        id: NO_DEFAULT,
        slug: 'nodefault',
        workspaces: [{ id: 'ws_0f0f0f', name: 'Only' }],
        endpoints: [
          {
            id: 'abababab-abab-4bab-8bab-abababababab',
            slug: 'chat',
            name: 'chat',
            kind: 'chat',
            tier: 'gpu',
            model: { id: 'model-nd', name: 'nd', context_window: 8192, capabilities: ['tools'] },
            upstream: { base_url: sim.url, model: 'sim-chat' },
          },
          {
            id: 'cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd',
            slug: 'plain',
            name: 'plain',
            kind: 'chat',
            tier: 'gpu',
            model: { id: 'model-plain', name: 'plain', context_window: 8192, capabilities: [] },
            upstream: { base_url: sim.url, model: 'sim-chat' },
          },
        ],
        keys: [{ value: noDefaultKey, scopes: ['inference', 'execution'] }],
      },
    ],
  });
  gw = await startGatewayProcess({ ...base, exec: { lease_ms: 1_800_000 } });
  ledger = openUsageDb(gw.dbPath);
  const joinKey = await mintJoinKey(gw.url, keys.full);
  agent = await connectTestAgent(gw.url, PROJECT, joinKey, {
    name: 'bridge-agent',
    workspaceIds: [WS_DEFAULT],
    tools: [echoTool, { name: 'rm', risk: 'destructive', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
  });
  agent.onDispatch((d) => agent.result(d.invocation_id, 0, { output: `echoed ${String(d.arguments.text)}` }));
});

afterAll(async () => {
  ledger?.close();
  await agent?.close();
  await gw?.stop();
  await sim?.stop();
});

const url = (path = `${PROJECT}/chat`): string => `${gw.url}/${path}/v1/chat/completions`;
let n = 0;
const user = (): Json[] => [{ role: 'user', content: `run the tools #${++n}` }];

async function chat(body: Json, key = bridgeKey, headers: Record<string, string> = {}, path?: string): Promise<JsonResponse> {
  return call(url(path), { key, body: { model: 'client-model', messages: user(), ...body }, headers });
}

/** The upstream requests made since `seq`, oldest first, with their bodies parsed. */
async function upstreamSince(seq: number): Promise<{ raw: SimRequest; body: Json }[]> {
  const all = await simRequests(sim.url, 50);
  return all
    .filter((r) => r.seq > seq && r.path === '/v1/chat/completions')
    .reverse()
    .map((r) => ({ raw: r, body: JSON.parse(r.body) as Json }));
}

const toolNames = (body: Json): string[] => ((body.tools as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name);

describe('a bridged turn', () => {
  it('runs the exec tool the model calls through an invocation and answers with its result; the second upstream turn carries the tool message', async () => {
    const seq = await simSeq(sim.url);
    const before = agent.dispatches.length;
    const res = await chat({ x_exec: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const body = res.body as Completion;
    expect(body.choices[0]?.message.content).toMatch(/^Tool result received:/);
    expect(body.choices[0]?.finish_reason).toBe('stop');
    expect(body.choices[0]?.message.tool_calls).toBeNull();
    expect(agent.dispatches.length).toBe(before + 1);
    expect(agent.dispatches.at(-1)).toMatchObject({ tool_name: 'echo', arguments: { text: 'sample' } });

    const turns = await upstreamSince(seq);
    expect(turns).toHaveLength(2);
    const first = turns[0] as { body: Json };
    const second = turns[1] as { body: Json };
    // Destructive tools are not offered; x_exec never goes upstream; every turn is buffered.
    expect(toolNames(first.body)).toEqual(['exec__echo']);
    expect(first.body).not.toHaveProperty('x_exec');
    expect(first.body.stream).toBe(false);
    const messages = second.body.messages as Json[];
    expect(messages).toHaveLength(3);
    const call0 = (messages[1]?.tool_calls as { id: string; function: { name: string } }[])[0];
    expect(messages[1]).toMatchObject({ role: 'assistant' });
    expect(call0?.function.name).toBe('exec__echo');
    expect(messages[2]).toMatchObject({ role: 'tool', tool_call_id: call0?.id });
    const result = JSON.parse(String(messages[2]?.content)) as Json;
    expect(result).toMatchObject({ status: 'completed', exit_code: 0, output: 'echoed sample', error: null });
    expect(String(result.invocation_id)).toMatch(/^inv_/);
  });

  it('bills one usage row per upstream turn (<id>, <id>.t2) and answers with their sum', async () => {
    const res = await chat({ x_exec: true });
    const body = res.body as Completion;
    const first = await ledger.waitForRow(body.id);
    const second = await ledger.waitForRow(`${body.id}.t2`);
    expect(ledger.rowsFor(`${body.id}.t3`)).toEqual([]);
    expect(first).toMatchObject({ status: 'completed', workspace_id: WS_DEFAULT, route: 'chat', usage_source: 'upstream', completion_tokens: 10 });
    expect(second).toMatchObject({ status: 'completed', completion_tokens: 16 });
    expect(body.usage.prompt_tokens).toBe(first.prompt_tokens + second.prompt_tokens);
    expect(body.usage.completion_tokens).toBe(26);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 26);
  });

  it('returns a call on a client tool to the client (finish_reason tool_calls) without running anything', async () => {
    const seq = await simSeq(sim.url);
    const before = agent.dispatches.length;
    const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
    const res = await chat({ x_exec: true, tools: [weather] });
    expect(res.status).toBe(200);
    const choice = (res.body as Completion).choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.tool_calls?.map((c) => c.function.name)).toEqual(['get_weather']);
    const turns = await upstreamSince(seq);
    expect(turns).toHaveLength(1);
    expect(toolNames(turns[0]?.body ?? {})).toEqual(['get_weather', 'exec__echo']);
    expect(agent.dispatches.length).toBe(before);
  });

  it('caps the output of all turns with max_tokens: the second turn gets what is left and ends with length', async () => {
    const seq = await simSeq(sim.url);
    const res = await chat({ x_exec: true, max_tokens: 20 });
    const body = res.body as Completion;
    expect(body.choices[0]?.finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBe(20);
    const turns = await upstreamSince(seq);
    expect(turns.map((t) => t.body.max_tokens)).toEqual([20, 10]);
  });

  it('ends with finish_reason length, running nothing, when the tool call itself spends the cap', async () => {
    const seq = await simSeq(sim.url);
    const before = agent.dispatches.length;
    const res = await chat({ x_exec: true, max_completion_tokens: 10 });
    const body = res.body as Completion;
    expect(body.choices[0]).toMatchObject({ finish_reason: 'length', message: { tool_calls: null } });
    expect(await upstreamSince(seq)).toHaveLength(1);
    expect(agent.dispatches.length).toBe(before);
  });

  it('streams the final answer as SSE chunks, with the usage of every turn in the usage chunk', async () => {
    const res = await fetch(url(), {
      method: 'POST',
      headers: { authorization: `Bearer ${bridgeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'client-model', messages: user(), stream: true, stream_options: { include_usage: true }, x_exec: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = parseSse(await res.text());
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const chunks = chunksOf(frames) as { object: string; choices: { delta: { content?: string | null }; finish_reason: string | null }[]; usage?: { completion_tokens: number } }[];
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    expect(text).toMatch(/^Tool result received:/);
    expect(chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean)).toEqual(['stop']);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(26);
  });

  it('works on the semantic router route pinned to a workspace', async () => {
    const res = await chat({ x_exec: true }, bridgeKey, {}, `${PROJECT}/${WS_DEFAULT}/_semantic/router`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as Completion).choices[0]?.message.content).toMatch(/^Tool result received:/);
  });
});

describe('refusals', () => {
  it('gives 403 scope_insufficient to a key without the execution scope, before any upstream turn', async () => {
    const seq = await simSeq(sim.url);
    expectError(await chat({ x_exec: true }, keys.full), 403, 'scope_insufficient', 'x_exec');
    expectError(await chat({ x_exec: true }, keys.inferenceOnly), 403, 'scope_insufficient', 'x_exec');
    expect(await simSeq(sim.url)).toBe(seq);
  });

  it('gives 400 missing_workspace_id when the request runs in no workspace (router route, project without a default)', async () => {
    expectError(await chat({ x_exec: true }, noDefaultKey, {}, `${NO_DEFAULT}/_semantic/router`), 400, 'missing_workspace_id', 'x_exec');
  });

  it('gives 400 model_capability_missing on a model without tool calling, before any upstream turn (SPEC exec error table)', async () => {
    const seq = await simSeq(sim.url);
    const res = await chat({ x_exec: true }, noDefaultKey, { 'x-workspace-id': 'ws_0f0f0f' }, `${NO_DEFAULT}/plain`);
    expectError(res, 400, 'model_capability_missing', 'x_exec');
    expect(errorOf(res).message).toContain('model model-plain does not support tool calling');
    expect(await simSeq(sim.url)).toBe(seq);
  });

  it('refuses a client tool under the reserved exec__ prefix', async () => {
    const mine = { type: 'function', function: { name: 'exec__mine', parameters: { type: 'object' } } };
    expectError(await chat({ x_exec: true, tools: [mine] }), 400, 'invalid_request', 'tools[0].function.name');
  });

  it('gives 503 tool_executor_unavailable when the agent of the tool the model calls went offline', async () => {
    const joinKey = await mintJoinKey(gw.url, keys.full);
    const leaving = await connectTestAgent(gw.url, PROJECT, joinKey, { name: 'leaving', workspaceIds: [WS_B], tools: [{ name: 'vanish', risk: 'read', input_schema: { type: 'object' } }] });
    const seq = await simSeq(sim.url);
    // The model takes 1.5 s to answer (a simulator knob in the body); the agent dies meanwhile.
    const pending = chat({ x_exec: true, sim: { delay_ms: 1500 } }, bridgeKey, { 'x-workspace-id': WS_B });
    await eventually(async () => (await simSeq(sim.url)) > seq, 'the first upstream turn');
    leaving.kill();
    await eventually(async () => {
      const tools = await call(`${gw.url}/${PROJECT}/v1/exec/tools?workspace_id=${WS_B}`, { key: bridgeKey, method: 'GET' });
      return tools.status === 200 && !(tools.body as { data: { name: string }[] }).data.some((t) => t.name === 'vanish');
    }, 'the agent offline');
    const res = await pending;
    expectError(res, 503, 'tool_executor_unavailable');
    expect(res.headers.get('x-should-retry')).toBe('true');
  });
});

describe('without x_exec', () => {
  it('sends the upstream exactly the client body with only model replaced', async () => {
    const raw = `{"model":"client-model","messages":[{"role":"user","content":"plain turn #${++n}"}],"max_tokens":12,"temperature":0.5}`;
    const res = await fetch(url(), { method: 'POST', headers: { authorization: `Bearer ${bridgeKey}`, 'content-type': 'application/json' }, body: raw });
    expect(res.status).toBe(200);
    const [last] = await simRequests(sim.url, 1);
    expect(last?.body).toBe(raw.replace('"client-model"', '"sim-chat"'));
  });

  it('treats x_exec: false as absent and never forwards the field', async () => {
    const seq = await simSeq(sim.url);
    const res = await chat({ x_exec: false });
    expect(res.status).toBe(200);
    const turns = await upstreamSince(seq);
    expect(turns).toHaveLength(1);
    expect(turns[0]?.body).not.toHaveProperty('x_exec');
    expect(turns[0]?.body).not.toHaveProperty('tools');
  });

  it('refuses an x_exec that is not a boolean', async () => {
    expectError(await chat({ x_exec: 'yes' }), 400, 'invalid_request', 'x_exec');
  });
});
