/**
 * Issue 12, the execution surface on PostgreSQL: two gateway processes, each with its own SQLite file,
 * share one fresh PostgreSQL database. Before the exec stores had a PostgreSQL implementation, agents,
 * join keys, invocations and approvals lived in each replica's SQLite file, so /exec had to go to one
 * "home" replica. Here a join key is minted on A and an agent enrolls and connects on A; an invocation
 * created through B runs on that agent and its result is read on B; an approval requested by an
 * invocation created on A is decided on B and the invocation completes; B's SSE events route follows an
 * invocation running on A to its end; and a replica killed with its agent's invocation in flight leaves
 * it failed `agent_offline` by the survivor.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolledAgent } from '../helpers/exec-agents.js';
import { eventually, execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT, WS_OPS } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, type GatewayProcess } from '../helpers/processes.js';
import { parseSse } from '../helpers/sse.js';

const keys = makeExecKeys();
const ENV = { ...PG_GATEWAY_ENV, SWITCHBOARD_INSTANCE_LEASE_MS: '3000' };
let database: TestDatabase;
let a: GatewayProcess;
let b: GatewayProcess;
let agent: TestAgent;

type Invocation = { id: string; status: string; agent_id: string | null; approval_id: string | null; output: string; error: { code: string } | null };

beforeAll(async () => {
  await requirePostgres();
  database = await freshDatabase();
  const config = { ...execConfig(keys, { exec: { lease_ms: 1_800_000 } }), storage: { kind: 'postgres', url: database.url } };
  // One after the other: the first migrates the database, the second finds it current.
  a = await startReplica(config, 'a', ENV);
  b = await startReplica(config, 'b', ENV);
  const joinKey = await mintJoinKey(a.url, keys.exec);
  agent = await connectTestAgent(a.url, PROJECT, joinKey, { name: 'on-a', tools: [echoTool, { name: 'deploy', risk: 'write' }] });
  // Answers every dispatch with its text.
  agent.onDispatch((d) => agent.result(d.invocation_id, 0, { output: `echo ${String(d.arguments.text ?? '')}` }));
}, 120_000);

afterAll(async () => {
  await agent?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await database?.drop();
});

const exec = (replica: GatewayProcess, path: string) => `${replica.url}/${PROJECT}/v1/exec${path}`;
const invoke = (replica: GatewayProcess, body: Record<string, unknown>) => call(exec(replica, '/invocations'), { key: keys.exec, body });
const read = async (replica: GatewayProcess, id: string): Promise<Invocation> => (await call(exec(replica, `/invocations/${id}`), { key: keys.exec })).body as Invocation;
const ended = (replica: GatewayProcess, id: string, status: string) =>
  eventually(async () => {
    const inv = await read(replica, id);
    return inv.status === status ? inv : null;
  }, `${id} ${status} on ${replica.url}`);

describe('two replicas sharing the execution surface in PostgreSQL', () => {
  it('lists on B the agent enrolled with a join key minted on A, online', async () => {
    const listed = await eventually(async () => {
      const res = await call(`${b.url}/${PROJECT}/v1/management/exec/agents`, { key: keys.exec });
      const data = (res.body as { data: { id: string; status: string }[] }).data;
      return data.every((x) => x.status === 'online') && data;
    }, 'the agent online on B');
    expect(listed.map((x) => x.id)).toEqual([agent.agentId]);
    const keysOnB = await call(`${b.url}/${PROJECT}/v1/management/exec/join-keys`, { key: keys.exec });
    expect((keysOnB.body as { data: unknown[] }).data).toHaveLength(1);
  });

  it('runs an invocation created through B on the agent connected to A, and reads its result on B', async () => {
    const res = await invoke(b, { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'from b' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const created = res.body as Invocation;
    const done = await ended(b, created.id, 'completed');
    expect(done).toMatchObject({ agent_id: agent.agentId, output: 'echo from b' });
    expect(agent.dispatches.some((d) => d.invocation_id === created.id)).toBe(true);
  });

  it('completes an invocation created on A whose approval is decided on B', async () => {
    const res = await invoke(a, { workspace_id: WS_OPS, tool_name: 'deploy', arguments: { text: 'approved' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const created = res.body as Invocation;
    expect(created.status).toBe('pending_approval');
    const accepted = await call(exec(b, `/approvals/${created.approval_id}/accept`), { key: keys.approver, body: {} });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect((await ended(a, created.id, 'completed')).output).toBe('echo approved');
    expect((await read(b, created.id)).status).toBe('completed');
  });

  it('streams on B the events of an invocation running on A, to its end', async () => {
    agent.onDispatch(() => undefined);
    const res = await invoke(a, { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'streamed' } });
    const created = res.body as Invocation;
    const dispatch = await eventually(async () => agent.dispatches.find((d) => d.invocation_id === created.id), 'the dispatch');
    const stream = await fetch(exec(b, `/invocations/${created.id}/events`), { headers: { authorization: `Bearer ${keys.exec}` } });
    expect(stream.status).toBe(200);
    const text = stream.text();
    await new Promise((r) => setTimeout(r, 200));
    agent.result(dispatch.invocation_id, 0, { output: 'all of it' });
    const frames = parseSse(await text).map((f) => f.data);
    expect(frames[0]).toBe(JSON.stringify({ type: 'status', status: 'dispatched' }));
    expect(frames.slice(-3)).toEqual([JSON.stringify({ type: 'output', data: 'all of it' }), JSON.stringify({ type: 'status', status: 'completed' }), '[DONE]']);
  });

  it('closes on A the socket of an agent deleted through B (4403), and of one whose key is rotated through B (4401)', async () => {
    const connect = `${a.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`;
    const joinKey = await mintJoinKey(b.url, keys.exec);
    const doomed = await enrolledAgent(connect, joinKey, 'doomed');
    const rotated = await enrolledAgent(connect, joinKey, 'rotated');
    // B learns of A's agents from the presence notices: online there too.
    for (const { enrolled } of [doomed, rotated]) {
      await eventually(async () => {
        const res = await call(`${b.url}/${PROJECT}/v1/management/exec/agents/${enrolled.agent_id}`, { key: keys.exec });
        return (res.body as { status: string }).status === 'online';
      }, `B sees ${enrolled.agent_id} online`);
    }
    const deleted = await call(`${b.url}/${PROJECT}/v1/management/exec/agents/${doomed.enrolled.agent_id}`, { key: keys.exec, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect((await doomed.socket.closed()).code).toBe(4403);
    const rotate = await call(`${b.url}/${PROJECT}/v1/management/exec/agents/${rotated.enrolled.agent_id}/rotate-key`, { key: keys.exec, method: 'POST' });
    expect(rotate.status).toBe(200);
    expect((await rotated.socket.closed()).code).toBe(4401);
  });

  it('fails agent_offline, on the survivor, what the agent of a killed replica was running', async () => {
    const res = await invoke(b, { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'never answered' } });
    const created = res.body as Invocation;
    await eventually(async () => agent.dispatches.find((d) => d.invocation_id === created.id), 'the dispatch');
    expect(await a.stop('SIGKILL')).toBe('SIGKILL');
    const failed = await eventually(async () => {
      const inv = await read(b, created.id);
      return inv.status === 'failed' ? inv : null;
    }, 'the failure on B', 20_000);
    expect(failed.error?.code).toBe('agent_offline');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM exec_invocations WHERE id = $1 AND owner_instance IS NOT NULL', [created.id]);
      expect(rows[0]?.n).toBe(1);
    } finally {
      await client.end();
    }
  }, 40_000);
});
