/**
 * The invocations' half of the execution surface through a real gateway (docs/exec.md "Invocations",
 * "Approvals", "Events"): every route and refusal, agents scripted over a real WebSocket, the approval
 * chain on the gateway's controllable clock, an agent killed mid-invocation, 20 concurrent identical
 * POSTs. Events are read as a real webhook receiver gets them (plain HTTP to 127.0.0.1 allowed: testing).
 *
 * Leases are half an hour here, so the clock moves of the approval and timeout tests never take agents
 * offline; the lease path has its own test at the end. Events are read in emission order from the
 * store's outbox (deliveries run concurrently, so a receiver sees them in any order); the first test also
 * checks they reach the receiver.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyPrefix } from '../../src/core/auth/key-token.js';
import { eventually, execConfig, makeExecKeys, mintJoinKey, OPS_CHAIN, OTHER_PROJECT, PROJECT, WS_B, WS_DEFAULT, WS_OPS } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { parseSse } from '../helpers/sse.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const keys = makeExecKeys();
const LEASE_MS = 1_800_000;
const CAP = 2048;
let gw: GatewayProcess;
let receiver: Receiver;
let joinKey: string;
let agent: TestAgent;
/** The id of keys.approver (decided_by): keys.exec creates the invocations, and may not decide them. */
let approverKeyId: string;

const EXEC_EVENTS = [
  'exec.dispatched', 'exec.completed', 'exec.failed', 'exec.timeout', 'exec.approval_requested', 'exec.approved', 'exec.rejected',
  'exec.approval_escalated', 'exec.approval_timed_out', 'exec.agent_offline',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const rmTool = { name: 'rm', risk: 'destructive' as const };
const deployTool = { name: 'deploy', risk: 'write' as const };

beforeAll(async () => {
  gw = await startGatewayProcess(execConfig(keys, { webhooks: true, exec: { lease_ms: LEASE_MS, output_cap_bytes: CAP } }));
  receiver = await startReceiver();
  const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.exec, body: { url: receiver.url, events: EXEC_EVENTS } });
  expect(hook.status).toBe(201);
  joinKey = await mintJoinKey(gw.url, keys.exec);
  agent = await connectTestAgent(gw.url, PROJECT, joinKey, { name: 'main', tools: [echoTool, rmTool, deployTool, { name: 'sleep' }] });
  const listed = await call(`${gw.url}/${PROJECT}/v1/management/api-keys?limit=100`, { key: keys.exec });
  const approver = (listed.body as { data: { id: string; prefix: string }[] }).data.find((k) => k.prefix === keyPrefix(keys.approver));
  approverKeyId = approver?.id ?? '';
  expect(approverKeyId).toMatch(/^key_/);
});

afterAll(async () => {
  await agent?.close();
  await gw?.stop();
  await receiver?.close();
});

type Invocation = {
  id: string; object: string; project_id: string; workspace_id: string; tool_name: string; arguments: Record<string, unknown>; status: string; risk: string;
  agent_id: string | null; approval_id: string | null; timeout_ms: number; exit_code: number | null; duration_ms: number | null; output: string;
  output_truncated: boolean; error: { code: string; message: string } | null; created_at: string; dispatched_at: string | null; completed_at: string | null;
};
type Approval = { id: string; object: string; invocation_id: string; state: string; stage: number; target: string; decided_by: string | null; reason: string | null; escalates_at: string | null };
type Envelope = { id: string; type: string; data: Record<string, unknown> };

const url = (path: string, project = PROJECT): string => `${gw.url}/${project}/v1/exec${path}`;

async function invoke(body: Record<string, unknown>, key = keys.exec, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(url('/invocations'), { key, body, headers });
}

async function created(body: Record<string, unknown>): Promise<Invocation> {
  const res = await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'hi' }, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Invocation;
}

async function get(id: string): Promise<Invocation> {
  const res = await call(url(`/invocations/${id}`), { key: keys.exec });
  expect(res.status).toBe(200);
  return res.body as Invocation;
}

async function settled(id: string, status: string): Promise<Invocation> {
  return eventually(async () => {
    const inv = await get(id);
    return inv.status === status ? inv : null;
  }, `${id} ${status}`);
}

/** An invocation's events in emission order, as the outbox holds them (the bodies every delivery sends). */
async function eventsFor(invocationId: string, count: number): Promise<Envelope[]> {
  const db = new Database(gw.dbPath, { readonly: true, fileMustExist: true });
  try {
    const read = db.prepare("SELECT body FROM webhook_events WHERE json_extract(body, '$.data.invocation_id') = ? ORDER BY rowid");
    return await eventually(async () => {
      const found = (read.all(invocationId) as { body: string }[]).map((r) => JSON.parse(r.body) as Envelope);
      return found.length >= count ? found : null;
    }, `${count} events of ${invocationId}`);
  } finally {
    db.close();
  }
}

/** Events of an invocation the receiver was sent. */
async function delivered(invocationId: string, count: number): Promise<Envelope[]> {
  return eventually(async () => {
    const found = receiver.received.map((d) => d.body as unknown as Envelope).filter((e) => e.data.invocation_id === invocationId);
    return found.length >= count ? found : null;
  }, `${count} deliveries of ${invocationId}`);
}

async function dispatchOf(id: string): Promise<{ invocation_id: string; timeout_ms: number; arguments: Record<string, unknown> }> {
  return eventually(async () => agent.dispatches.find((d) => d.invocation_id === id), `dispatch of ${id}`);
}

describe('scope and authentication', () => {
  const routes: [string, string][] = [
    ['POST', '/invocations'], ['GET', '/invocations'], ['GET', '/invocations/inv_000000000000000000000000'],
    ['POST', '/invocations/inv_000000000000000000000000/cancel'], ['GET', '/invocations/inv_000000000000000000000000/events'],
    ['GET', '/tools'], ['GET', '/tools/echo'], ['GET', '/approvals'], ['POST', '/approvals/app_000000000000000000000000/accept'],
    ['POST', '/approvals/app_000000000000000000000000/reject'],
  ];

  it.each(routes)('%s %s refuses an inference-only key: 403 scope_insufficient (authentication_error)', async (method, path) => {
    const res = await call(url(path), { method, key: keys.inferenceOnly, ...(method === 'POST' ? { body: {} } : {}) });
    expectError(res, 403, 'scope_insufficient');
    expect(errorOf(res).type).toBe('authentication_error');
  });

  it('answers 401 without a key', async () => {
    expect((await call(url('/invocations'))).status).toBe(401);
  });
});

describe('POST /v1/exec/invocations validation', () => {
  it('refuses a body that is not JSON: invalid_body', async () => {
    expectError(await call(url('/invocations'), { key: keys.exec, body: '{"workspace_id":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_body');
  });

  it('refuses unknown fields, a missing tool_name and an out-of-range timeout: invalid_body naming the field', async () => {
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', tool: 'x' }), 400, 'invalid_body', 'tool');
    expectError(await invoke({ workspace_id: WS_DEFAULT }), 400, 'invalid_body', 'tool_name');
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', timeout_ms: 0 }), 400, 'invalid_body', 'timeout_ms');
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', timeout_ms: 3_600_001 }), 400, 'invalid_body', 'timeout_ms');
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: [1] }), 400, 'invalid_body', 'arguments');
  });

  it('checks the body before the workspace', async () => {
    expectError(await invoke({ tool_name: 5 }), 400, 'invalid_body', 'tool_name');
  });

  it('refuses a missing workspace: missing_workspace_id', async () => {
    expectError(await invoke({ tool_name: 'echo' }), 400, 'missing_workspace_id', 'workspace_id');
  });

  it('refuses a UUID or other non ws_<hex> workspace: invalid_workspace_id', async () => {
    expectError(await invoke({ workspace_id: '0a1b2c3d-0000-4000-8000-000000000000', tool_name: 'echo' }), 400, 'invalid_workspace_id', 'workspace_id');
    expectError(await invoke({ workspace_id: 'ws_XYZ', tool_name: 'echo' }), 400, 'invalid_workspace_id', 'workspace_id');
  });

  it('refuses a workspace no project has: 404 workspace_not_found', async () => {
    expectError(await invoke({ workspace_id: 'ws_0e0f0e', tool_name: 'echo' }), 404, 'workspace_not_found', 'workspace_id');
  });

  it("refuses another project's workspace: 403 project_mismatch (SPEC error table)", async () => {
    const res = await invoke({ workspace_id: 'ws_0d0d0d', tool_name: 'echo' });
    expectError(res, 403, 'project_mismatch', 'workspace_id');
    expect(errorOf(res).message).toBe(`Workspace ws_0d0d0d belongs to another project than the API key's (${PROJECT}); name a workspace of ${PROJECT}.`);
  });

  it("refuses a workspace outside a confined key's list: 403 workspace_not_allowed", async () => {
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'x' } }, keys.execConfined), 403, 'workspace_not_allowed', 'workspace_id');
  });

  it('refuses a tool no online agent offers: 400 exec_tool_not_found', async () => {
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'nope' }), 400, 'exec_tool_not_found', 'tool_name');
  });

  it("checks arguments against the tool's input_schema: invalid_body with the JSON pointer", async () => {
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 3 } }), 400, 'invalid_body', 'arguments/text');
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: {} }), 400, 'invalid_body', 'arguments/text');
  });

  it('refuses an empty or over-long Idempotency-Key', async () => {
    const body = { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'x' } };
    expectError(await invoke(body, keys.exec, { 'idempotency-key': 'k'.repeat(256) }), 400, 'invalid_request', 'Idempotency-Key');
  });
});

describe('running an invocation', () => {
  it('dispatches to the agent, completes on exit 0, and emits exec.dispatched then exec.completed with SPEC fields', async () => {
    const inv = await created({ timeout_ms: 30_000 });
    expect(inv).toMatchObject({ object: 'exec.invocation', project_id: PROJECT, workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'hi' }, status: 'dispatched', risk: 'read', agent_id: agent.agentId, approval_id: null, timeout_ms: 30_000 });
    expect(inv.id).toMatch(/^inv_[0-9a-f]{24}$/);
    expect(inv.created_at).toMatch(ISO);
    const d = await dispatchOf(inv.id);
    expect(d).toMatchObject({ tool_name: 'echo', arguments: { text: 'hi' } });
    expect(d.timeout_ms).toBeGreaterThan(29_000);
    agent.output(inv.id, 'hello ');
    await settled(inv.id, 'running');
    agent.result(inv.id, 0, { output: 'world' });
    const done = await settled(inv.id, 'completed');
    expect(done).toMatchObject({ exit_code: 0, output: 'hello world', output_truncated: false, error: null });
    expect(done.duration_ms).toBeGreaterThanOrEqual(0);
    expect(done.completed_at).toMatch(ISO);
    const [dispatched, completed] = await eventsFor(inv.id, 2);
    expect(dispatched?.type).toBe('exec.dispatched');
    expect(dispatched?.data).toEqual({ invocation_id: inv.id, tool_name: 'echo', workspace_id: WS_DEFAULT, agent_id: agent.agentId, risk: 'read', dispatched_at: inv.dispatched_at });
    expect(completed?.type).toBe('exec.completed');
    expect(Object.keys(completed?.data ?? {}).sort()).toEqual(['completed_at', 'duration_ms', 'exit_code', 'invocation_id', 'status']);
    expect(completed?.data).toMatchObject({ invocation_id: inv.id, status: 'success', exit_code: 0, duration_ms: done.duration_ms, completed_at: done.completed_at });
    const sent = await delivered(inv.id, 2);
    expect(sent.map((e) => e.id).sort()).toEqual([dispatched?.id, completed?.id].sort());
  });

  it('fails on a non-zero exit: error non_zero_exit and exec.failed', async () => {
    const inv = await created({});
    await dispatchOf(inv.id);
    agent.result(inv.id, 2, { error: 'No such file or directory' });
    const done = await settled(inv.id, 'failed');
    expect(done).toMatchObject({ exit_code: 2, error: { code: 'non_zero_exit', message: 'No such file or directory' } });
    const events = await eventsFor(inv.id, 2);
    expect(events[1]).toMatchObject({ type: 'exec.failed', data: { invocation_id: inv.id, error_code: 'non_zero_exit', error_message: 'No such file or directory' } });
    expect(Object.keys(events[1]?.data ?? {}).sort()).toEqual(['error_code', 'error_message', 'failed_at', 'invocation_id']);
  });

  it('caps the output at exec.output_cap_bytes and marks it truncated', async () => {
    const inv = await created({});
    await dispatchOf(inv.id);
    agent.output(inv.id, 'a'.repeat(CAP - 10));
    agent.output(inv.id, '€'.repeat(10));
    agent.result(inv.id, 0);
    const done = await settled(inv.id, 'completed');
    expect(done.output).toBe('a'.repeat(CAP - 10) + '€'.repeat(3));
    expect(done.output_truncated).toBe(true);
  });

  it('times out on the clock: failed with error timeout, exec.timeout, and the agent is told to cancel', async () => {
    const inv = await created({ tool_name: 'sleep', arguments: {}, timeout_ms: 5000 });
    await dispatchOf(inv.id);
    await advanceClock(gw.url, 5000);
    const done = await settled(inv.id, 'failed');
    expect(done.error?.code).toBe('timeout');
    await agent.waitForCancel(inv.id);
    const events = await eventsFor(inv.id, 2);
    expect(events.map((e) => e.type)).toEqual(['exec.dispatched', 'exec.timeout']);
    expect(events[1]?.data).toMatchObject({ invocation_id: inv.id, timeout_ms: 5000 });
    expect(events[1]?.data.elapsed_ms).toBeGreaterThanOrEqual(5000);
    expect(events[1]?.data.timed_out_at).toMatch(ISO);
    expect(Object.keys(events[1]?.data ?? {}).sort()).toEqual(['elapsed_ms', 'invocation_id', 'timed_out_at', 'timeout_ms']);
  });
});

describe('reading invocations', () => {
  it("answers 404 invocation_not_found for an unknown id and for another project's invocation", async () => {
    const inv = await created({});
    expectError(await call(url('/invocations/inv_ffffffffffffffffffffffff'), { key: keys.exec }), 404, 'invocation_not_found', 'invocation_id');
    expectError(await call(url(`/invocations/${inv.id}`, OTHER_PROJECT), { key: keys.otherExec }), 404, 'invocation_not_found', 'invocation_id');
    expectError(await call(url(`/invocations/${inv.id}/cancel`, OTHER_PROJECT), { key: keys.otherExec, method: 'POST' }), 404, 'invocation_not_found', 'invocation_id');
    expectError(await call(url(`/invocations/${inv.id}`), { key: keys.execConfined }), 404, 'invocation_not_found', 'invocation_id');
    agent.result(inv.id, 0);
  });

  it('lists newest first with limit, after and has_more, filtered by status and workspace', async () => {
    const a = await created({});
    const b = await created({});
    const c = await created({});
    const page1 = await call(url('/invocations?limit=2'), { key: keys.exec });
    expect(page1.status).toBe(200);
    const body1 = page1.body as { object: string; data: Invocation[]; has_more: boolean };
    expect(body1.object).toBe('list');
    expect(body1.data.map((i) => i.id)).toEqual([c.id, b.id]);
    expect(body1.has_more).toBe(true);
    const page2 = (await call(url(`/invocations?limit=2&after=${b.id}`), { key: keys.exec })).body as { data: Invocation[] };
    expect(page2.data[0]?.id).toBe(a.id);
    agent.result(b.id, 1);
    await settled(b.id, 'failed');
    const failed = (await call(url('/invocations?status=failed&limit=100'), { key: keys.exec })).body as { data: Invocation[] };
    expect(failed.data.every((i) => i.status === 'failed')).toBe(true);
    expect(failed.data.map((i) => i.id)).toContain(b.id);
    const inB = (await call(url(`/invocations?workspace_id=${WS_B}`), { key: keys.exec })).body as { data: Invocation[] };
    expect(inB.data).toEqual([]);
    const confined = (await call(url('/invocations'), { key: keys.execConfined })).body as { data: Invocation[] };
    expect(confined.data).toEqual([]);
    for (const i of [a, c]) agent.result(i.id, 0);
  });

  it('refuses a bad status, limit or after', async () => {
    expectError(await call(url('/invocations?status=done'), { key: keys.exec }), 400, 'invalid_query', 'status');
    expectError(await call(url('/invocations?limit=101'), { key: keys.exec }), 400, 'invalid_limit', 'limit');
    expectError(await call(url('/invocations?after=inv_ffffffffffffffffffffffff'), { key: keys.exec }), 400, 'invalid_query', 'after');
    expectError(await call(url('/invocations?workspace_id=nope'), { key: keys.exec }), 400, 'invalid_workspace_id', 'workspace_id');
  });
});

describe('cancel', () => {
  it('cancels a dispatched invocation (the agent hears invocation.cancel), then 409 invocation_terminal', async () => {
    const inv = await created({ tool_name: 'sleep', arguments: {} });
    await dispatchOf(inv.id);
    const res = await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: inv.id, status: 'cancelled', error: { code: 'cancelled' } });
    await agent.waitForCancel(inv.id);
    expectError(await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' }), 409, 'invocation_terminal', 'invocation_id');
    // A late result changes nothing.
    agent.result(inv.id, 0);
    expect((await get(inv.id)).status).toBe('cancelled');
  });

  it('refuses to cancel a completed invocation: 409 invocation_terminal', async () => {
    const inv = await created({});
    await dispatchOf(inv.id);
    agent.result(inv.id, 0);
    await settled(inv.id, 'completed');
    expectError(await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' }), 409, 'invocation_terminal', 'invocation_id');
  });
});

describe('the events stream', () => {
  it('sends the status, every change and the output, then [DONE]', async () => {
    const inv = await created({});
    await dispatchOf(inv.id);
    const stream = fetch(url(`/invocations/${inv.id}/events`), { headers: { authorization: `Bearer ${keys.exec}` } });
    const res = await stream;
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const text = res.text();
    await new Promise((r) => setTimeout(r, 100));
    agent.output(inv.id, 'line 1\n');
    agent.output(inv.id, 'line 2\n');
    agent.result(inv.id, 0);
    const frames = parseSse(await text);
    expect(frames.map((f) => f.data)).toEqual([
      JSON.stringify({ type: 'status', status: 'dispatched' }),
      JSON.stringify({ type: 'status', status: 'running' }),
      JSON.stringify({ type: 'output', data: 'line 1\n' }),
      JSON.stringify({ type: 'output', data: 'line 2\n' }),
      JSON.stringify({ type: 'status', status: 'completed' }),
      '[DONE]',
    ]);
  });

  it('ends with the cancelled error payload (no type field) then [DONE] on a cancel', async () => {
    const inv = await created({ tool_name: 'sleep', arguments: {} });
    await dispatchOf(inv.id);
    agent.output(inv.id, 'working');
    await settled(inv.id, 'running');
    const res = await fetch(url(`/invocations/${inv.id}/events`), { headers: { authorization: `Bearer ${keys.exec}` } });
    const text = res.text();
    await new Promise((r) => setTimeout(r, 100));
    expect((await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' })).status).toBe(200);
    const frames = parseSse(await text);
    expect(frames.map((f) => f.data)).toEqual([
      JSON.stringify({ type: 'status', status: 'running' }),
      JSON.stringify({ type: 'output', data: 'working' }),
      JSON.stringify({ type: 'status', status: 'cancelled' }),
      JSON.stringify({ error: { code: 'cancelled', message: 'The invocation was cancelled.' } }),
      '[DONE]',
    ]);
    const error = JSON.parse(frames[3]?.data ?? '{}') as { error: Record<string, unknown> };
    expect('type' in error.error).toBe(false);
  });

  it('answers at once for a finished invocation, and 404 for an unknown one', async () => {
    const inv = await created({});
    await dispatchOf(inv.id);
    agent.result(inv.id, 0, { output: 'done' });
    await settled(inv.id, 'completed');
    const res = await fetch(url(`/invocations/${inv.id}/events`), { headers: { authorization: `Bearer ${keys.exec}` } });
    expect(parseSse(await res.text()).map((f) => f.data)).toEqual([JSON.stringify({ type: 'status', status: 'completed' }), JSON.stringify({ type: 'output', data: 'done' }), '[DONE]']);
    expectError(await call(url('/invocations/inv_ffffffffffffffffffffffff/events'), { key: keys.exec }), 404, 'invocation_not_found', 'invocation_id');
  });
});

describe('Idempotency-Key', () => {
  const body = (text: string) => ({ workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text } });

  it('creates one invocation for 20 concurrent identical POSTs (one 201, the rest 200 with the same id)', async () => {
    const before = agent.dispatches.length;
    const results = await Promise.all(Array.from({ length: 20 }, () => invoke(body('once'), keys.exec, { 'idempotency-key': 'concurrent-1' })));
    const ids = new Set(results.map((r) => (r.body as Invocation).id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(19);
    const [id = ''] = [...ids];
    await dispatchOf(id);
    agent.result(id, 0);
    // Dispatches go out in creation order: once a later invocation's is in, a second of this one would be too.
    const later = await created({});
    await dispatchOf(later.id);
    agent.result(later.id, 0);
    expect(agent.dispatches.slice(before).map((d) => d.invocation_id)).toEqual([id, later.id]);
  });

  it('answers the same key with another body 409 exec_idempotency_conflict, and the same body (keys in another order) 200', async () => {
    const first = await invoke({ ...body('a'), timeout_ms: 1000 }, keys.exec, { 'idempotency-key': 'k-2' });
    expect(first.status).toBe(201);
    const reordered = await invoke({ timeout_ms: 1000, arguments: { text: 'a' }, tool_name: 'echo', workspace_id: WS_DEFAULT }, keys.exec, { 'idempotency-key': 'k-2' });
    expect(reordered.status).toBe(200);
    expect((reordered.body as Invocation).id).toBe((first.body as Invocation).id);
    expectError(await invoke(body('b'), keys.exec, { 'idempotency-key': 'k-2' }), 409, 'exec_idempotency_conflict', 'Idempotency-Key');
    agent.result((first.body as Invocation).id, 0);
  });

  it('keeps keys per project', async () => {
    const res = await invoke(body('x'), keys.otherExec, { 'idempotency-key': 'k-2' });
    expect(res.status).not.toBe(409);
  });
});

describe('the tools catalog', () => {
  it('lists the online agents’ tools with their agents and workspaces', async () => {
    const res = await call(url('/tools'), { key: keys.exec });
    expect(res.status).toBe(200);
    const list = res.body as { object: string; data: { name: string; risk: string; agent_ids: string[]; workspace_ids: string[]; input_schema: unknown; description: string; mcp_visible: boolean }[] };
    expect(list.object).toBe('list');
    expect(list.data.map((t) => t.name)).toEqual(['deploy', 'echo', 'rm', 'sleep']);
    expect(list.data[1]).toEqual({ name: 'echo', description: 'Prints its text', input_schema: echoTool.input_schema, risk: 'read', mcp_visible: true, agent_ids: [agent.agentId], workspace_ids: [WS_DEFAULT, WS_B, 'ws_0c0c0c', WS_OPS].sort() });
    const narrowed = (await call(url(`/tools?workspace_id=${WS_OPS}`), { key: keys.exec })).body as { data: { workspace_ids: string[] }[] };
    expect(narrowed.data[0]?.workspace_ids).toEqual([WS_OPS]);
  });

  it('reads one tool, and answers 404 exec_tool_not_found for a name no agent offers', async () => {
    const one = await call(url('/tools/rm'), { key: keys.exec });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ name: 'rm', risk: 'destructive', agent_ids: [agent.agentId] });
    expectError(await call(url('/tools/nope'), { key: keys.exec }), 404, 'exec_tool_not_found', 'tool_name');
    expectError(await call(url('/tools/echo', OTHER_PROJECT), { key: keys.otherExec }), 404, 'exec_tool_not_found', 'tool_name');
  });
});

describe('approvals', () => {
  async function pending(tool = 'rm', workspaceId = WS_OPS): Promise<Invocation> {
    const inv = await created({ workspace_id: workspaceId, tool_name: tool, arguments: {} });
    expect(inv.status).toBe('pending_approval');
    expect(inv.approval_id).toMatch(/^app_[0-9a-f]{24}$/);
    return inv;
  }
  const decide = (id: string, verb: 'accept' | 'reject', body?: object, key = keys.approver) => call(url(`/approvals/${id}/${verb}`), { key, method: 'POST', ...(body ? { body } : {}) });

  it('holds a destructive invocation until another privileged key accepts it (decided_by = that key id), then dispatches it', async () => {
    const inv = await pending();
    expect(agent.dispatches.some((d) => d.invocation_id === inv.id)).toBe(false);
    const listed = (await call(url('/approvals?state=pending'), { key: keys.exec })).body as { object: string; data: Approval[]; has_more: boolean };
    expect(listed.data.find((a) => a.id === inv.approval_id)).toMatchObject({ object: 'exec.approval', invocation_id: inv.id, state: 'pending', stage: 1, target: 'oncall' });
    const res = await decide(inv.approval_id ?? '', 'accept');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: inv.approval_id, state: 'accepted', decided_by: approverKeyId, escalates_at: null });
    await dispatchOf(inv.id);
    agent.result(inv.id, 0);
    await settled(inv.id, 'completed');
    const events = await eventsFor(inv.id, 4);
    expect(events.map((e) => e.type)).toEqual(['exec.approval_requested', 'exec.approved', 'exec.dispatched', 'exec.completed']);
    expect(events[0]?.data).toEqual({ invocation_id: inv.id, approval_id: inv.approval_id, tool_name: 'rm', risk: 'destructive', workspace_id: WS_OPS, requested_at: inv.created_at });
    expect(Object.keys(events[1]?.data ?? {}).sort()).toEqual(['approval_id', 'approved_at', 'decided_by', 'invocation_id']);
    expect(events[1]?.data).toMatchObject({ decided_by: approverKeyId });
  });

  it('holds a tool the workspace lists (deploy in the ops workspace), not elsewhere', async () => {
    const held = await pending('deploy');
    expect(held.risk).toBe('write');
    const free = await created({ workspace_id: WS_DEFAULT, tool_name: 'deploy', arguments: {} });
    expect(free.status).toBe('dispatched');
    agent.result(free.id, 0);
    await decide(held.approval_id ?? '', 'reject');
  });

  it('fails the invocation when rejected, with exec.rejected carrying the reason', async () => {
    const inv = await pending();
    const res = await decide(inv.approval_id ?? '', 'reject', { reason: 'not during the freeze' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'rejected', reason: 'not during the freeze', decided_by: approverKeyId });
    expect(await get(inv.id)).toMatchObject({ status: 'failed', error: { code: 'approval_rejected' } });
    const events = await eventsFor(inv.id, 3);
    expect(events.map((e) => e.type)).toEqual(['exec.approval_requested', 'exec.rejected', 'exec.failed']);
    expect(Object.keys(events[1]?.data ?? {}).sort()).toEqual(['approval_id', 'invocation_id', 'reason', 'rejected_at']);
    expect(events[1]?.data).toMatchObject({ reason: 'not during the freeze' });
  });

  it('refuses a second decision (409 approval_not_pending), unknown ids and other projects (404 approval_not_found), and bad bodies', async () => {
    const inv = await pending();
    const id = inv.approval_id ?? '';
    expectError(await decide(id, 'reject', { reason: 'x'.repeat(1001) }), 400, 'invalid_body', 'reason');
    expectError(await decide(id, 'accept', { why: 'x' }), 400, 'invalid_body', 'why');
    expect((await decide(id, 'reject', {})).status).toBe(200);
    expectError(await decide(id, 'accept'), 409, 'approval_not_pending', 'approval_id');
    expectError(await decide(id, 'reject'), 409, 'approval_not_pending', 'approval_id');
    expectError(await decide('app_ffffffffffffffffffffffff', 'accept'), 404, 'approval_not_found', 'approval_id');
    expectError(await call(url(`/approvals/${id}/accept`, OTHER_PROJECT), { key: keys.otherExec, method: 'POST' }), 404, 'approval_not_found', 'approval_id');
    expectError(await call(url('/approvals?state=maybe'), { key: keys.exec }), 400, 'invalid_query', 'state');
  });

  it('refuses the key that asked, and a key with no user and no management scope: 403 approval_not_permitted, the approval still pending', async () => {
    const inv = await pending();
    const id = inv.approval_id ?? '';
    for (const verb of ['accept', 'reject'] as const) {
      const own = await decide(id, verb, {}, keys.exec);
      expectError(own, 403, 'approval_not_permitted', 'approval_id');
      expect(errorOf(own).message).toMatch(new RegExp(`^Approval ${id} was requested with this API key \\(key_\\w+\\); someone else must decide it\\.$`));
      const unprivileged = await decide(id, verb, {}, keys.execOnly);
      expectError(unprivileged, 403, 'approval_not_permitted');
      expect(errorOf(unprivileged).message).toContain('this API key has no user and lacks the management scope');
    }
    expect(await get(inv.id)).toMatchObject({ status: 'pending_approval' });
    expect((await decide(id, 'accept')).status).toBe(200);
  });

  it("refuses a key whose value the asking key received, by creating or rotating it (one holder, two keys); the asking key's own issuer may decide", async () => {
    const mgmt = (path: string, key: string, body: object) => call(`${gw.url}/${PROJECT}/v1/management/api-keys${path}`, { key, method: 'POST', body });
    // A key minted through the API by the config's management key, which it may then use to mint and rotate.
    const asker = (await mgmt('', keys.exec, { name: 'asker', scopes: ['execution', 'management'] })).body as { id: string; value: string };
    const res = await invoke({ workspace_id: WS_OPS, tool_name: 'rm', arguments: {} }, asker.value);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const invoked = res.body as Invocation;
    const id = invoked.approval_id ?? '';
    expectError(await decide(id, 'accept', {}, asker.value), 403, 'approval_not_permitted', 'approval_id');

    // A key it mints, and a key minted by that one: both refused.
    const minted = (await mgmt('', asker.value, { name: 'sidekick', scopes: ['execution', 'management'] })).body as { id: string; value: string };
    const grandchild = (await mgmt('', minted.value, { name: 'sidekick of sidekick', scopes: ['execution', 'management'] })).body as { id: string; value: string };
    for (const key of [minted.value, grandchild.value]) {
      const refused = await decide(id, 'accept', {}, key);
      expectError(refused, 403, 'approval_not_permitted', 'approval_id');
      expect(errorOf(refused).message).toMatch(new RegExp(`^Approval ${id} was requested with key ${asker.id}, which received the value of this API key \\(key_\\w+\\) or of a key it was issued from; someone else must decide it\\.$`));
    }

    // A key it rotates: it now holds that key's new value.
    const other = (await mgmt('', keys.exec, { name: 'taken over', scopes: ['execution', 'management'] })).body as { id: string; value: string };
    const rotated = (await mgmt(`/${other.id}/rotate`, asker.value, {})).body as { value: string };
    expectError(await decide(id, 'accept', {}, rotated.value), 403, 'approval_not_permitted', 'approval_id');
    expect(await get(invoked.id)).toMatchObject({ status: 'pending_approval' });

    // The key that issued the asking key is another principal (an operator delegating to an agent): it decides.
    const decided = await decide(id, 'accept', {}, keys.exec);
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ state: 'accepted' });
  });

  it('withdraws a pending approval when its invocation is cancelled', async () => {
    const inv = await pending();
    expect((await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' })).status).toBe(200);
    expectError(await decide(inv.approval_id ?? '', 'accept'), 409, 'approval_not_pending', 'approval_id');
    const expired = (await call(url('/approvals?state=expired&limit=100'), { key: keys.exec })).body as { data: Approval[] };
    expect(expired.data.map((a) => a.id)).toContain(inv.approval_id);
  });

  it('escalates along the workspace chain on the clock, then times out and fails the invocation (approval_expired)', async () => {
    const inv = await pending();
    const approvalId = inv.approval_id ?? '';
    const approval = async (): Promise<Approval> => {
      const list = (await call(url(`/approvals?workspace_id=${WS_OPS}&limit=100`), { key: keys.exec })).body as { data: Approval[] };
      const found = list.data.find((a) => a.id === approvalId);
      if (!found) throw new Error('approval not listed');
      return found;
    };
    await advanceClock(gw.url, OPS_CHAIN[0]?.timeout_ms ?? 0);
    await eventually(async () => (await approval()).stage === 2, 'stage 2');
    expect(await approval()).toMatchObject({ state: 'pending', stage: 2, target: 'leads' });
    await advanceClock(gw.url, OPS_CHAIN[1]?.timeout_ms ?? 0);
    await eventually(async () => (await approval()).stage === 3, 'stage 3');
    expect((await approval()).target).toBe('cto');
    await advanceClock(gw.url, OPS_CHAIN[2]?.timeout_ms ?? 0);
    const failed = await settled(inv.id, 'failed');
    expect(failed.error?.code).toBe('approval_expired');
    expect((await approval()).state).toBe('expired');
    const events = await eventsFor(inv.id, 5);
    expect(events.map((e) => e.type)).toEqual(['exec.approval_requested', 'exec.approval_escalated', 'exec.approval_escalated', 'exec.approval_timed_out', 'exec.failed']);
    expect(events[1]?.data).toMatchObject({ invocation_id: inv.id, approval_id: approvalId, stage: 2, target: 'leads' });
    expect(events[2]?.data).toMatchObject({ stage: 3, target: 'cto' });
    expect(Object.keys(events[1]?.data ?? {}).sort()).toEqual(['approval_id', 'escalated_at', 'invocation_id', 'stage', 'target']);
    expect(events[3]?.data).toEqual({ invocation_id: inv.id, approval_id: approvalId, timed_out_at: expect.stringMatching(ISO) });
    expect(events[4]?.data).toMatchObject({ error_code: 'approval_expired' });
  });

  it("lists only a confined key's workspaces", async () => {
    const list = (await call(url('/approvals'), { key: keys.execConfined })).body as { data: Approval[] };
    expect(list.data).toEqual([]);
  });
});

describe('agents going offline', () => {
  it('fails the invocations of an agent killed mid-invocation: exec.agent_offline then exec.failed', async () => {
    const doomed = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'doomed', tools: [{ name: 'only-doomed' }] });
    const inv = await created({ tool_name: 'only-doomed', arguments: {} });
    expect(inv.agent_id).toBe(doomed.agentId);
    await eventually(async () => doomed.dispatches[0], 'dispatch');
    doomed.output(inv.id, 'half');
    await settled(inv.id, 'running');
    doomed.kill();
    const failed = await settled(inv.id, 'failed');
    expect(failed).toMatchObject({ error: { code: 'agent_offline' }, output: 'half' });
    const events = await eventsFor(inv.id, 3);
    expect(events.map((e) => e.type)).toEqual(['exec.dispatched', 'exec.agent_offline', 'exec.failed']);
    expect(events[1]?.data).toEqual({ invocation_id: inv.id, agent_id: doomed.agentId, reason: 'disconnected', detected_at: expect.stringMatching(ISO) });
    expect(events[2]?.data).toMatchObject({ error_code: 'agent_offline' });
    expectError(await invoke({ workspace_id: WS_DEFAULT, tool_name: 'only-doomed' }), 400, 'exec_tool_not_found', 'tool_name');
  });

  it('reports an agent that leaves running nothing: one exec.agent_offline with invocation_id null', async () => {
    const idle = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'idle', tools: [{ name: 'only-idle' }] });
    await idle.close();
    const db = new Database(gw.dbPath, { readonly: true, fileMustExist: true });
    try {
      const read = db.prepare("SELECT body FROM webhook_events WHERE json_extract(body, '$.type') = 'exec.agent_offline' AND json_extract(body, '$.data.agent_id') = ?");
      const events = await eventually(async () => {
        const found = (read.all(idle.agentId) as { body: string }[]).map((r) => JSON.parse(r.body) as Envelope);
        return found.length > 0 ? found : null;
      }, 'the idle agent offline event');
      expect(events.map((e) => e.data)).toEqual([{ invocation_id: null, agent_id: idle.agentId, reason: 'disconnected', detected_at: expect.stringMatching(ISO) }]);
    } finally {
      db.close();
    }
  });

  it('fails them when the agent’s lease expires on the clock (reason lease_expired)', async () => {
    const silent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'silent', tools: [{ name: 'only-silent' }], heartbeatMs: 3_600_000 });
    const inv = await created({ tool_name: 'only-silent', arguments: {}, timeout_ms: 2 * LEASE_MS });
    await eventually(async () => silent.dispatches[0], 'dispatch');
    // Last test of the file: a jump of a whole lease may take the main agent offline too (its heartbeat
    // races the lease check), which nothing after this needs.
    await advanceClock(gw.url, LEASE_MS);
    const failed = await settled(inv.id, 'failed');
    expect(failed.error?.code).toBe('agent_offline');
    const events = await eventsFor(inv.id, 3);
    expect(events[1]?.data).toMatchObject({ reason: 'lease_expired', agent_id: silent.agentId });
    await silent.close();
  });
});
