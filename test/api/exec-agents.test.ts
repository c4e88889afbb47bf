/**
 * The agents' half of the execution surface through a real gateway (docs/exec.md): join keys, the agent
 * WebSocket protocol driven by a scripted agent socket (every refusal and protocol error), leases on the
 * gateway's controllable clock, and the agent management routes. Events are read as a real webhook
 * receiver gets them (plain HTTP to 127.0.0.1 is allowed here: security.allow_*, testing only).
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, OTHER_PROJECT, PROJECT, testConfig, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { advanceClock, call, expectError } from '../helpers/http.js';
import { agentSocket, ECHO_TOOL, enroll, enrolledAgent, isRefused, openAgentSocket, type AgentSocket } from '../helpers/exec-agents.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const keys = makeKeys();
let sim: SimulatorProcess;
let gw: GatewayProcess;
let receiver: Receiver;
const LEASE_MS = 30_000;
const AGENT_EVENTS = ['join_key.created', 'join_key.revoked', 'agent.created', 'agent.updated', 'agent.deleted', 'agent.enrolled', 'agent.key_rotated', 'exec.agent_enrolled'];

beforeAll(async () => {
  sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, {
    security: { allow_private_targets: true, allow_http_targets: true },
    webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 },
    // Many management calls, and no clock jumps to reset the window: those would expire every lease.
    limits: { management_requests_per_minute: 100_000 },
  });
  gw = await startGatewayProcess({ ...config, exec: { lease_ms: LEASE_MS } });
  receiver = await startReceiver();
  const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: AGENT_EVENTS } });
  expect(hook.status).toBe(201);
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
  await receiver?.close();
});

const mgmt = (path: string): string => `${gw.url}/${PROJECT}/v1/management/exec${path}`;
const connectUrl = (project = PROJECT): string => `${gw.url.replace(/^http/, 'ws')}/${project}/v1/exec/agents/connect`;

type JoinKeyWire = { id: string; object: string; name: string | null; value?: string; created_at: string; revoked_at: string | null };
type AgentWire = { id: string; status: string; registration_name: string; description: string | null; workspace_ids: string[]; tools: unknown[]; manifest_hash: string; project_id: string; deleted_at: string | null; last_seen_at: string; enrolled_at: string };
type Envelope = { id: string; type: string; created_at: number; data: Record<string, unknown> };

async function newJoinKey(name?: string): Promise<JoinKeyWire & { value: string }> {
  const res = await call(mgmt('/join-keys'), { key: keys.full, method: 'POST', ...(name === undefined ? {} : { body: { name } }) });
  expect(res.status).toBe(201);
  return res.body as JoinKeyWire & { value: string };
}

async function getAgent(id: string): Promise<AgentWire> {
  const res = await call(mgmt(`/agents/${id}`), { key: keys.full });
  expect(res.status).toBe(200);
  return res.body as AgentWire;
}

/** Events of `type` delivered whose data matches, once `count` have arrived (or the wait is over). */
async function eventsOf(type: string, match: Record<string, unknown>, count = 1, waitMs = 5000): Promise<Envelope[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const found = receiver.received
      .map((d) => d.body as unknown as Envelope)
      .filter((e) => e.type === type && Object.entries(match).every(([k, v]) => JSON.stringify(e.data[k]) === JSON.stringify(v)));
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Exactly one such event: the first arrives, and no second within a further half second. */
async function onceOnly(type: string, match: Record<string, unknown>): Promise<Envelope> {
  expect(await eventsOf(type, match)).toHaveLength(1);
  const all = await eventsOf(type, match, 2, 500);
  expect(all).toHaveLength(1);
  return all[0] as Envelope;
}

function projectUuid(): string {
  const db = new Database(gw.dbPath, { readonly: true });
  try {
    return (db.prepare('SELECT uuid FROM projects WHERE id = ?').get(PROJECT) as { uuid: string }).uuid;
  } finally {
    db.close();
  }
}

/** The protocol error an agent is sent, and the close that follows. */
async function protocolError(socket: AgentSocket): Promise<{ code: unknown; close: number }> {
  const error = await socket.next('error');
  const { code } = await socket.closed();
  expect(typeof error.message).toBe('string');
  return { code: error.code, close: code };
}

/** Hex SHA-256 of the JSON with keys sorted at every level: docs/exec.md's manifest_hash, computed here independently. */
function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${sortedJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

describe('join keys', () => {
  it('creates a key shown once (sjk_ + 43 base64url, no-store), lists it without its value, and emits join_key.created', async () => {
    const res = await call(mgmt('/join-keys'), { key: keys.full, body: { name: 'ci runners' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const key = res.body as JoinKeyWire;
    expect(key).toMatchObject({ object: 'exec.join_key', name: 'ci runners', revoked_at: null });
    expect(key.id).toMatch(/^jk_[0-9a-f]{24}$/);
    expect(key.value).toMatch(/^sjk_[A-Za-z0-9_-]{43}$/);
    expect(new Date(key.created_at).toISOString()).toBe(key.created_at);

    const list = await call(mgmt('/join-keys'), { key: keys.full });
    expect(list.status).toBe(200);
    const listed = (list.body as { object: string; data: JoinKeyWire[] }).data.find((k) => k.id === key.id);
    expect(listed).toEqual({ id: key.id, object: 'exec.join_key', name: 'ci runners', created_at: key.created_at, revoked_at: null });

    const [event] = await eventsOf('join_key.created', { join_key_id: key.id });
    expect(event?.data).toEqual({ join_key_id: key.id, name: 'ci runners', created_at: key.created_at });
  });

  it('stores only the SHA-256 of the value', async () => {
    const key = await newJoinKey();
    const db = new Database(gw.dbPath, { readonly: true });
    try {
      const row = db.prepare('SELECT * FROM exec_join_keys WHERE id = ?').get(key.id) as Record<string, unknown>;
      expect(row.key_hash).toBe(createHash('sha256').update(key.value).digest('hex'));
      expect(Object.values(row)).not.toContain(key.value);
    } finally {
      db.close();
    }
  });

  it('revokes with DELETE (revoked_at set, once: a second DELETE answers the same), emits join_key.revoked once, and a revoked key cannot connect', async () => {
    const key = await newJoinKey('temporary');
    const first = await call(mgmt(`/join-keys/${key.id}`), { key: keys.full, method: 'DELETE' });
    expect(first.status).toBe(200);
    const revoked = first.body as JoinKeyWire;
    expect(revoked).toMatchObject({ id: key.id, name: 'temporary' });
    expect(revoked.revoked_at).not.toBeNull();
    expect(revoked.value).toBeUndefined();
    const again = await call(mgmt(`/join-keys/${key.id}`), { key: keys.full, method: 'DELETE' });
    expect(again.body).toEqual(revoked);

    expect((await onceOnly('join_key.revoked', { join_key_id: key.id })).data).toEqual({ join_key_id: key.id, name: 'temporary', revoked_at: revoked.revoked_at });

    const socket = await openAgentSocket(connectUrl(), key.value);
    expect(isRefused(socket) && { status: socket.status, code: socket.body.error.code }).toEqual({ status: 401, code: 'key_revoked' });
  });

  it('refuses an unknown field and a JSON error (400 invalid_body), an unknown id (404 join_key_not_found) and a key without the management scope (403)', async () => {
    expectError(await call(mgmt('/join-keys'), { key: keys.full, body: { name: 'x', scope: 'all' } }), 400, 'invalid_body', 'scope');
    expectError(await call(mgmt('/join-keys'), { key: keys.full, method: 'POST', body: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_body');
    expectError(await call(mgmt('/join-keys'), { key: keys.full, body: { name: '' } }), 400, 'invalid_body', 'name');
    expectError(await call(mgmt('/join-keys/jk_000000000000000000000000'), { key: keys.full, method: 'DELETE' }), 404, 'join_key_not_found');
    expectError(await call(mgmt('/join-keys'), { key: keys.inferenceOnly }), 403, 'scope_insufficient');
    expectError(await call(mgmt('/join-keys'), { key: keys.otherProject }), 403, 'project_mismatch');
  });
});

describe('the connect upgrade', () => {
  it('is refused before the upgrade without a key (401), with an API key or an unknown key (401 invalid_api_key), and with another project in the path (403 project_mismatch)', async () => {
    const key = await newJoinKey();
    const cases: [string | undefined, string, number, string][] = [
      [undefined, connectUrl(), 401, 'authentication_required'],
      [keys.full, connectUrl(), 401, 'invalid_api_key'],
      [`sjk_${'A'.repeat(43)}`, connectUrl(), 401, 'invalid_api_key'],
      [`sak_${'A'.repeat(43)}`, connectUrl(), 401, 'invalid_api_key'],
      [key.value, connectUrl(OTHER_PROJECT), 403, 'project_mismatch'],
    ];
    for (const [bearer, url, status, code] of cases) {
      const s = await openAgentSocket(url, bearer);
      expect(isRefused(s) && { status: s.status, code: s.body.error.code }).toEqual({ status, code });
    }
  });

  it('answers a plain GET with a good key 426 upgrade_required, and without one 401', async () => {
    const key = await newJoinKey();
    const url = connectUrl().replace(/^ws/, 'http');
    expectError(await call(url, { key: key.value }), 426, 'upgrade_required');
    expectError(await call(url), 401, 'authentication_required');
  });
});

describe('enrollment', () => {
  it('enrolls with a join key: enrolled {agent_id, agent_key, lease_ms}, listed online with its tools, with agent.created, agent.enrolled and exec.agent_enrolled', async () => {
    const key = await newJoinKey();
    const { socket, enrolled } = await enrolledAgent(connectUrl(), key.value, 'builder-1', { description: 'build box', workspace_ids: [WS_B] });
    expect(enrolled.agent_id).toMatch(/^agt_[0-9a-f]{24}$/);
    expect(enrolled.agent_key).toMatch(/^sak_[A-Za-z0-9_-]{43}$/);
    expect(enrolled.lease_ms).toBe(LEASE_MS);

    const agent = await getAgent(enrolled.agent_id);
    const hash = `sha256:${createHash('sha256').update(sortedJson({ tools: [ECHO_TOOL] })).digest('hex')}`;
    expect(agent).toMatchObject({
      object: 'exec.agent',
      registration_name: 'builder-1',
      description: 'build box',
      workspace_ids: [WS_B],
      status: 'online',
      manifest_hash: hash,
      tools: [ECHO_TOOL],
      deleted_at: null,
    });
    const list = (await call(mgmt('/agents'), { key: keys.full })).body as { data: AgentWire[] };
    expect(list.data.map((a) => a.id)).toContain(enrolled.agent_id);

    const [execEnrolled] = await eventsOf('exec.agent_enrolled', { agent_id: enrolled.agent_id });
    const uuid = projectUuid();
    expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(agent.project_id).toBe(PROJECT);
    expect(execEnrolled?.data).toEqual({ agent_id: enrolled.agent_id, registration_name: 'builder-1', project_id: uuid, manifest_hash: hash, enrolled_at: agent.enrolled_at });
    const [created] = await eventsOf('agent.created', { agent_id: enrolled.agent_id });
    expect(created?.data).toMatchObject({ registration_name: 'builder-1', join_key_id: key.id, workspace_ids: [WS_B] });
    const [agentEnrolled] = await eventsOf('agent.enrolled', { agent_id: enrolled.agent_id });
    expect(agentEnrolled?.data).toMatchObject({ manifest_hash: hash, tools: ['echo'] });
    socket.ws.close();
  });

  it('refuses a manifest ajv cannot compile, a repeated tool name, a first message that is not enroll, and an unknown workspace: exec_manifest_invalid, close 4400', async () => {
    const key = await newJoinKey();
    const bad: Record<string, unknown>[] = [
      enroll('bad-schema', {}, [{ ...ECHO_TOOL, input_schema: { type: 'object', properties: { text: { type: 'strin' } } } }]),
      enroll('bad-required', {}, [{ ...ECHO_TOOL, input_schema: { type: 'object', required: 'text' } }]),
      enroll('bad-top', {}, [{ ...ECHO_TOOL, input_schema: { type: 'string' } }]),
      enroll('dup', {}, [ECHO_TOOL, ECHO_TOOL]),
      enroll('bad-risk', {}, [{ ...ECHO_TOOL, risk: 'harmless' }]),
      enroll('bad tool', {}, [{ ...ECHO_TOOL, name: 'has space' }]),
      enroll('unknown-ws', { workspace_ids: ['ws_0e0e0e'] }),
      { type: 'heartbeat' },
    ];
    for (const message of bad) {
      const socket = await agentSocket(connectUrl(), key.value);
      socket.send(message);
      expect(await protocolError(socket)).toEqual({ code: 'exec_manifest_invalid', close: 4400 });
    }
    const socket = await agentSocket(connectUrl(), key.value);
    socket.ws.send('not json');
    expect(await protocolError(socket)).toEqual({ code: 'exec_manifest_invalid', close: 4400 });
  });

  it('accepts schema annotations ajv does not know (strict mode off)', async () => {
    const key = await newJoinKey();
    const tool = { ...ECHO_TOOL, name: 'annotated', input_schema: { type: 'object', properties: { at: { type: 'string', format: 'x-custom', examples: ['a'] } }, 'x-owner': 'ops' } };
    const socket = await agentSocket(connectUrl(), key.value);
    socket.send(enroll('annotated', {}, [tool]));
    await socket.next('enrolled');
    socket.ws.close();
  });

  it('agent_name_in_use while an agent holding the name is online; agent_name_conflict once it is offline (its name belongs to another key)', async () => {
    const key = await newJoinKey();
    const first = await enrolledAgent(connectUrl(), key.value, 'shared-name');
    const second = await agentSocket(connectUrl(), key.value);
    second.send(enroll('shared-name'));
    expect(await protocolError(second)).toEqual({ code: 'agent_name_in_use', close: 4400 });
    // The same agent key twice: its agent is connected already.
    const twin = await agentSocket(connectUrl(), first.enrolled.agent_key ?? '');
    twin.send(enroll('shared-name'));
    expect(await protocolError(twin)).toEqual({ code: 'agent_name_in_use', close: 4400 });

    first.socket.ws.close();
    await until(async () => (await getAgent(first.enrolled.agent_id)).status === 'offline', 'the agent offline');
    const third = await agentSocket(connectUrl(), key.value);
    third.send(enroll('shared-name'));
    expect(await protocolError(third)).toEqual({ code: 'agent_name_conflict', close: 4400 });
  });

  it('reconnects with the agent key as the same agent, with a new manifest; the agent key gets no new key', async () => {
    const key = await newJoinKey();
    const first = await enrolledAgent(connectUrl(), key.value, 'reconnector', { workspace_ids: [WS_DEFAULT] });
    const agentKey = first.enrolled.agent_key ?? '';
    first.socket.ws.close();
    await until(async () => (await getAgent(first.enrolled.agent_id)).status === 'offline', 'the agent offline');

    const again = await agentSocket(connectUrl(), agentKey);
    const more = { ...ECHO_TOOL, name: 'echo2' };
    // An agent key cannot widen its workspaces: those are the operator's after the first enrollment.
    again.send(enroll('reconnector', { workspace_ids: [WS_B] }, [ECHO_TOOL, more]));
    const enrolled = await again.next('enrolled');
    expect(enrolled).toEqual({ type: 'enrolled', agent_id: first.enrolled.agent_id, lease_ms: LEASE_MS });
    const agent = await getAgent(first.enrolled.agent_id);
    expect(agent).toMatchObject({ status: 'online', workspace_ids: [WS_DEFAULT], tools: [ECHO_TOOL, more] });
    expect(await eventsOf('agent.enrolled', { agent_id: agent.id }, 2)).toHaveLength(2);
    await onceOnly('agent.created', { agent_id: agent.id });
    again.ws.close();
  });

  it('answers an unreadable runtime message with invalid_body and keeps the connection', async () => {
    const key = await newJoinKey();
    const { socket, enrolled } = await enrolledAgent(connectUrl(), key.value, 'chatty');
    socket.send({ type: 'bogus' });
    expect(await socket.next('error')).toMatchObject({ code: 'invalid_body' });
    socket.send({ type: 'invocation.result', invocation_id: 'inv_x' });
    expect(await socket.next('error')).toMatchObject({ code: 'invalid_body' });
    socket.send({ type: 'heartbeat' });
    expect((await getAgent(enrolled.agent_id)).status).toBe('online');
    socket.ws.close();
  });
});

describe('leases (on the gateway clock)', () => {
  it('takes an agent silent for lease_ms offline and closes its socket 4408; a heartbeat keeps another online; a connection that never enrolls is closed too', async () => {
    const key = await newJoinKey();
    const silent = await enrolledAgent(connectUrl(), key.value, 'silent');
    const beating = await enrolledAgent(connectUrl(), key.value, 'beating');
    const idle = await agentSocket(connectUrl(), key.value);
    await advanceClock(gw.url, LEASE_MS - 1000);
    const before = (await getAgent(beating.enrolled.agent_id)).last_seen_at;
    beating.socket.send({ type: 'heartbeat' });
    await until(async () => (await getAgent(beating.enrolled.agent_id)).last_seen_at > before, 'the heartbeat seen');
    await advanceClock(gw.url, 2000);

    expect(await silent.socket.closed()).toMatchObject({ code: 4408 });
    expect(await idle.closed()).toMatchObject({ code: 4408 });
    expect((await getAgent(silent.enrolled.agent_id)).status).toBe('offline');
    expect((await getAgent(beating.enrolled.agent_id)).status).toBe('online');
    beating.socket.ws.close();
  });
});

describe('agent management', () => {
  it('PATCHes description and workspace_ids (agent.updated) and refuses bad ones', async () => {
    const key = await newJoinKey();
    const { socket, enrolled } = await enrolledAgent(connectUrl(), key.value, 'patchable');
    const id = enrolled.agent_id;
    const res = await call(mgmt(`/agents/${id}`), { key: keys.full, method: 'PATCH', body: { description: 'now described', workspace_ids: [WS_B] } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, description: 'now described', workspace_ids: [WS_B], status: 'online' });
    const [updated] = await eventsOf('agent.updated', { agent_id: id });
    expect(updated?.data).toMatchObject({ registration_name: 'patchable', changed: ['description', 'workspace_ids'], description: 'now described', workspace_ids: [WS_B] });

    const patch = (body: unknown) => call(mgmt(`/agents/${id}`), { key: keys.full, method: 'PATCH', body: body as object });
    expectError(await patch({ workspace_ids: ['B'] }), 400, 'invalid_workspace_id', 'workspace_ids[0]');
    expectError(await patch({ workspace_ids: ['ws_0e0e0e'] }), 404, 'workspace_not_found', 'workspace_ids[0]');
    expectError(await patch({ registration_name: 'renamed' }), 400, 'invalid_body', 'registration_name');
    expectError(await patch({ description: 42 }), 400, 'invalid_body', 'description');
    expectError(await call(mgmt('/agents/agt_000000000000000000000000'), { key: keys.full }), 404, 'agent_not_found');
    expectError(await call(mgmt('/agents/agt_000000000000000000000000'), { key: keys.full, method: 'PATCH', body: {} }), 404, 'agent_not_found');
    socket.ws.close();
  });

  it('DELETE soft-deletes: a connected agent is closed 4403, the agent leaves the list but stays readable, its key stops, its name is free, agent.deleted once', async () => {
    const key = await newJoinKey();
    const { socket, enrolled } = await enrolledAgent(connectUrl(), key.value, 'doomed');
    const id = enrolled.agent_id;
    const res = await call(mgmt(`/agents/${id}`), { key: keys.full, method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, object: 'exec.agent', deleted: true });
    expect(await socket.closed()).toMatchObject({ code: 4403 });
    expect((await call(mgmt(`/agents/${id}`), { key: keys.full, method: 'DELETE' })).body).toEqual({ id, object: 'exec.agent', deleted: true });

    const agent = await getAgent(id);
    expect(agent.status).toBe('offline');
    expect(agent.deleted_at).not.toBeNull();
    const list = (await call(mgmt('/agents'), { key: keys.full })).body as { data: AgentWire[] };
    expect(list.data.map((a) => a.id)).not.toContain(id);
    expect((await onceOnly('agent.deleted', { agent_id: id })).data).toEqual({ agent_id: id, registration_name: 'doomed', deleted_at: agent.deleted_at });

    const refused = await openAgentSocket(connectUrl(), enrolled.agent_key);
    expect(isRefused(refused) && refused.body.error.code).toBe('key_revoked');
    expectError(await call(mgmt(`/agents/${id}`), { key: keys.full, method: 'PATCH', body: { description: 'x' } }), 409, 'invalid_state');
    expectError(await call(mgmt(`/agents/${id}/rotate-key`), { key: keys.full, method: 'POST' }), 409, 'invalid_state');
    const successor = await enrolledAgent(connectUrl(), key.value, 'doomed');
    expect(successor.enrolled.agent_id).not.toBe(id);
    successor.socket.ws.close();
  });

  it('rotate-key returns a new agent key once; the old one stops at once (a connected agent is closed 4401); agent.key_rotated', async () => {
    const key = await newJoinKey();
    const { socket, enrolled } = await enrolledAgent(connectUrl(), key.value, 'rotating');
    const id = enrolled.agent_id;
    const res = await call(mgmt(`/agents/${id}/rotate-key`), { key: keys.full, method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const { agent_key: fresh } = res.body as { id: string; agent_key: string };
    expect(res.body).toEqual({ id, agent_key: expect.stringMatching(/^sak_[A-Za-z0-9_-]{43}$/) });
    expect(fresh).not.toBe(enrolled.agent_key);
    expect(await socket.closed()).toMatchObject({ code: 4401 });
    expect((await onceOnly('agent.key_rotated', { agent_id: id })).data).toMatchObject({ agent_id: id, registration_name: 'rotating' });

    const old = await openAgentSocket(connectUrl(), enrolled.agent_key);
    expect(isRefused(old) && { status: old.status, code: old.body.error.code }).toEqual({ status: 401, code: 'invalid_api_key' });
    const again = await agentSocket(connectUrl(), fresh);
    again.send(enroll('rotating'));
    expect(await again.next('enrolled')).toMatchObject({ agent_id: id });
    again.ws.close();
  });
});
