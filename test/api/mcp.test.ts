/**
 * The MCP server (docs/mcp.md) driven by the official SDK client over real HTTP, against a real gateway
 * and the reference agent (`switchboard agent`) running real commands: tools/list, a read tool's output,
 * a destructive tool's approval followed through the exec.* tools, the refusals (a hidden tool, a key
 * without the execution scope, a workspace outside a confined key's list, a foreign Origin or Host), and
 * sessions (ended by DELETE, never shared between keys).
 */
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../helpers/exec-agents.js';
import { eventually, execConfig, makeExecKeys, PROJECT, WS_B, WS_DEFAULT } from '../helpers/exec-config.js';
import { connectMcp, mcpUrl, startMcpAgent, type McpConnection } from '../helpers/mcp-client.js';
import { call } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';

const keys = makeExecKeys();
/** execution, 3 requests per minute (the key quota of SPEC Authentication 8). */
const quotaKey = mintTestKey('test');
let gw: GatewayProcess;
let agent: AgentProcess;
let mcp: McpConnection;
/** Another privileged key's session: it decides what `mcp` asked for (no principal decides its own). */
let approver: McpConnection;

type Structured = Record<string, unknown> & { id: string; status: string; approval_id: string | null; output: string };
const structured = (r: CallToolResult): Structured => r.structuredContent as Structured;
const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } };

/** A raw initialize, to read the HTTP status and body of a refusal. */
type Refusal = { error: { code: string; type: string; param: string | null } };

async function rawInitialize(headers: Record<string, string>): Promise<{ status: number; body: Refusal }> {
  const res = await fetch(mcpUrl(gw.url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(INITIALIZE) });
  const text = await res.text();
  // A refusal is the gateway's JSON envelope; an accepted initialize is an SSE stream (no error in it).
  const body = res.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as Refusal) : { error: { code: '', type: '', param: null } };
  return { status: res.status, body };
}

beforeAll(async () => {
  const config = execConfig(keys);
  (config.projects[0] as unknown as { keys: Record<string, unknown>[] }).keys.push({ value: quotaKey, scopes: ['execution'], quota_requests: 3, quota_window: 60 });
  gw = await startGatewayProcess(config);
  agent = await startMcpAgent(gw.url, keys.exec, tempDir());
  mcp = await connectMcp(gw.url, keys.exec);
  approver = await connectMcp(gw.url, keys.approver);
});

afterAll(async () => {
  await mcp?.client.close();
  await approver?.client.close();
  await agent?.stop('SIGKILL');
  await gw?.stop();
});

describe('MCP tools/list', () => {
  it("lists the workspace's MCP-visible agent tools with their JSON Schemas, then the exec.* tools", async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['nap', 'noop', 'say', 'wipe', 'exec.invocation_status', 'exec.invocation_cancel', 'exec.approvals_list', 'exec.approval_accept', 'exec.approval_reject']);
    const say = tools.find((t) => t.name === 'say');
    expect(say).toMatchObject({ description: 'Prints the text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, annotations: { readOnlyHint: true, destructiveHint: false } });
    expect(tools.find((t) => t.name === 'wipe')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(tools.find((t) => t.name === 'exec.approval_accept')?.inputSchema).toMatchObject({ type: 'object', required: ['approval_id'] });
  });

  it('offers the decide tools only to a key that may decide approvals (not an execution-only key with no user)', async () => {
    const c = await connectMcp(gw.url, keys.execOnly);
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names.filter((n) => n.startsWith('exec.'))).toEqual(['exec.invocation_status', 'exec.invocation_cancel', 'exec.approvals_list']);
    await c.client.close();
  });
});

describe('MCP tools/call', () => {
  it("answers a read tool with the command's output as text, and the invocation as structured content", async () => {
    const r = (await mcp.client.callTool({ name: 'say', arguments: { text: 'hello over MCP' } })) as CallToolResult;
    expect(r.isError).toBe(false);
    expect(textOf(r)).toBe('hello over MCP');
    expect(structured(r)).toMatchObject({ object: 'exec.invocation', tool_name: 'say', status: 'completed', exit_code: 0, workspace_id: WS_DEFAULT });
    // The same invocation the REST surface reads: one service, one store.
    const rest = await call(`${gw.url}/${PROJECT}/v1/exec/invocations/${structured(r).id}`, { key: keys.exec });
    expect(rest.body).toMatchObject({ id: structured(r).id, status: 'completed', output: 'hello over MCP' });
  });

  it("answers a destructive tool at once with its pending approval; another key's exec.approval_accept runs it and exec.invocation_status shows the result", async () => {
    const pending = (await mcp.client.callTool({ name: 'wipe', arguments: { target: 'disk0' } })) as CallToolResult;
    const inv = structured(pending);
    expect(pending.isError).toBe(false);
    expect(inv).toMatchObject({ status: 'pending_approval', risk: 'destructive' });
    expect(inv.approval_id).toMatch(/^app_[0-9a-f]+$/);
    expect(textOf(pending)).toContain(inv.approval_id);

    const listed = structured((await mcp.client.callTool({ name: 'exec.approvals_list', arguments: { state: 'pending' } })) as CallToolResult) as unknown as { data: { id: string }[] };
    expect(listed.data.map((a) => a.id)).toContain(inv.approval_id);

    const accepted = (await approver.client.callTool({ name: 'exec.approval_accept', arguments: { approval_id: inv.approval_id } })) as CallToolResult;
    expect(structured(accepted)).toMatchObject({ object: 'exec.approval', state: 'accepted', invocation_id: inv.id });

    const done = await eventually(async () => {
      const s = structured((await mcp.client.callTool({ name: 'exec.invocation_status', arguments: { invocation_id: inv.id } })) as CallToolResult);
      return s.status === 'completed' ? s : null;
    }, 'the accepted wipe completes', 10_000);
    expect(done).toMatchObject({ output: 'wiped disk0', exit_code: 0 });
  });

  it('rejects a pending approval with exec.approval_reject, and the invocation fails', async () => {
    const inv = structured((await mcp.client.callTool({ name: 'wipe', arguments: { target: 'disk1' } })) as CallToolResult);
    const rejected = (await approver.client.callTool({ name: 'exec.approval_reject', arguments: { approval_id: inv.approval_id, reason: 'not today' } })) as CallToolResult;
    expect(structured(rejected)).toMatchObject({ state: 'rejected', reason: 'not today' });
    const after = structured((await mcp.client.callTool({ name: 'exec.invocation_status', arguments: { invocation_id: inv.id } })) as CallToolResult);
    expect(after).toMatchObject({ status: 'failed', error: { code: 'approval_rejected' } });
    const again = (await approver.client.callTool({ name: 'exec.approval_accept', arguments: { approval_id: inv.approval_id } })) as CallToolResult;
    expect(again.isError).toBe(true);
    expect(again.structuredContent).toMatchObject({ error: { code: 'approval_not_pending' } });
  });

  it('refuses the session that called a destructive tool its own approval (403 approval_not_permitted as an error result); the call does not run', async () => {
    const inv = structured((await mcp.client.callTool({ name: 'wipe', arguments: { target: 'disk9' } })) as CallToolResult);
    for (const name of ['exec.approval_accept', 'exec.approval_reject']) {
      const own = (await mcp.client.callTool({ name, arguments: { approval_id: inv.approval_id } })) as CallToolResult;
      expect(own.isError).toBe(true);
      expect(own.structuredContent).toMatchObject({ error: { code: 'approval_not_permitted', type: 'permission_error', param: 'approval_id' } });
      expect(textOf(own)).toContain('someone else must decide it');
    }
    // An execution-only key with no user may decide nothing, listed or not.
    const c = await connectMcp(gw.url, keys.execOnly);
    const unprivileged = (await c.client.callTool({ name: 'exec.approval_accept', arguments: { approval_id: inv.approval_id } })) as CallToolResult;
    expect(unprivileged.structuredContent).toMatchObject({ error: { code: 'approval_not_permitted', param: null } });
    await c.client.close();
    const after = structured((await mcp.client.callTool({ name: 'exec.invocation_status', arguments: { invocation_id: inv.id } })) as CallToolResult);
    expect(after).toMatchObject({ status: 'pending_approval' });
    await mcp.client.callTool({ name: 'exec.invocation_cancel', arguments: { invocation_id: inv.id } });
  });

  it('gives the MCP error carrying tool_not_mcp_visible for a tool that exists but is not MCP-visible', async () => {
    const err = await mcp.client.callTool({ name: 'hidden', arguments: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect(err).toMatchObject({ code: -32602, data: { error: { code: 'tool_not_mcp_visible', param: 'name' } } });
  });

  it('gives exec_tool_not_found for a tool no agent offers', async () => {
    const err = await mcp.client.callTool({ name: 'nope', arguments: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: -32602, data: { error: { code: 'exec_tool_not_found' } } });
  });

  it("answers arguments that fail the tool's schema with an error result naming the field (invalid_body)", async () => {
    const r = (await mcp.client.callTool({ name: 'say', arguments: { text: 42 } })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ error: { code: 'invalid_body', param: 'arguments/text' } });
    const status = (await mcp.client.callTool({ name: 'exec.invocation_status', arguments: { invocation_id: 'inv_000000000000000000000000' } })) as CallToolResult;
    expect(status.structuredContent).toMatchObject({ error: { code: 'invocation_not_found' } });
  });

  it('cancels a pending invocation with exec.invocation_cancel', async () => {
    const inv = structured((await mcp.client.callTool({ name: 'wipe', arguments: { target: 'disk2' } })) as CallToolResult);
    const cancelled = (await mcp.client.callTool({ name: 'exec.invocation_cancel', arguments: { invocation_id: inv.id } })) as CallToolResult;
    expect(structured(cancelled)).toMatchObject({ status: 'cancelled' });
  });
});

describe('MCP authentication and workspaces', () => {
  it('refuses a key without the execution scope with 403 authentication_error (SPEC Authentication 3)', async () => {
    const r = await rawInitialize({ authorization: `Bearer ${keys.inferenceOnly}` });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ type: 'authentication_error', code: 'scope_insufficient' });
    // The SDK client sees the same refusal: its StreamableHTTPError carries the status.
    await expect(connectMcp(gw.url, keys.inferenceOnly)).rejects.toMatchObject({ code: 403, message: expect.stringContaining('authentication_error') });
  });

  it('refuses a confined key naming another workspace with X-Service-Workspace: 403 workspace_not_allowed', async () => {
    const r = await rawInitialize({ authorization: `Bearer ${keys.execConfined}`, 'x-service-workspace': WS_DEFAULT });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('workspace_not_allowed');
  });

  it("runs a confined key's calls in its single workspace when none is named", async () => {
    const c = await connectMcp(gw.url, keys.execConfined);
    const r = (await c.client.callTool({ name: 'say', arguments: { text: 'in B' } })) as CallToolResult;
    expect(structured(r)).toMatchObject({ workspace_id: WS_B, output: 'in B' });
    await c.client.close();
  });

  it('refuses a body nesting deeper than the API allows with 400 invalid_json, as every JSON route does', async () => {
    const deep = `${'['.repeat(600)}${']'.repeat(600)}`;
    const res = await fetch(mcpUrl(gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.exec}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${deep}}`,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });

  it("counts every MCP request against the key's quota, as on the API: 429 past it", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await rawInitialize({ authorization: `Bearer ${quotaKey}` })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await rawInitialize({ authorization: `Bearer ${quotaKey}` });
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
  });

  it('answers 401 without a key', async () => {
    const r = await rawInitialize({});
    expect(r.status).toBe(401);
  });
});

describe('MCP Origin and Host (DNS rebinding)', () => {
  it('refuses a browser Origin it does not know with 403 origin_not_allowed, before the key', async () => {
    const r = await rawInitialize({ authorization: `Bearer ${keys.exec}`, origin: 'http://evil.example.com' });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('origin_not_allowed');
  });

  it('refuses a Host that is not a loopback name on a gateway listening on loopback', async () => {
    const { request } = await import('node:http');
    const url = new URL(mcpUrl(gw.url));
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { host: 'evil.example.com', authorization: `Bearer ${keys.exec}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify(INITIALIZE));
    });
    expect(status).toBe(403);
  });

  it('accepts a loopback browser Origin', async () => {
    const c = await connectMcp(gw.url, keys.exec, { origin: 'http://localhost:6274' });
    expect((await c.client.listTools()).tools.length).toBe(9);
    await c.client.close();
  });
});

describe('MCP sessions', () => {
  it('answers GET with 405: the server sends no server-initiated messages, so it offers no standalone stream', async () => {
    const res = await fetch(mcpUrl(gw.url), { headers: { authorization: `Bearer ${keys.exec}`, accept: 'text/event-stream', 'mcp-session-id': mcp.transport.sessionId ?? '' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/POST/);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
  });

  it('ends a session on DELETE; the id is then unknown (404)', async () => {
    const c = await connectMcp(gw.url, keys.exec);
    const id = c.transport.sessionId ?? '';
    expect(id).not.toBe('');
    await c.transport.terminateSession();
    const res = await fetch(mcpUrl(gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.exec}`, 'mcp-session-id': id, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    await c.client.close();
  });

  // Regression: MCP sends no answer to a cancelled request, so its POST's stream stayed open and the session
  // busy (never closed for the per-key cap, never idle) until the client dropped the connection.
  it('ends the stream of a call the client cancels (notifications/cancelled): the session is free again', async () => {
    const headers = { authorization: `Bearer ${keys.exec}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(mcpUrl(gw.url), { method: 'POST', headers, body: JSON.stringify(INITIALIZE) });
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': '2025-06-18' };
    await init.text();
    await fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const napping = await fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'nap', arguments: {} } }) });
    expect(napping.status).toBe(200);
    const streamEnded = napping.text();
    // The invocation is under way before it is cancelled (the agent logs `run <id> nap`).
    await agent.waitFor(/run inv_[0-9a-f]+ nap/);
    const cancel = await fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'user' } }) });
    expect(cancel.status).toBe(202);
    // The nap would hold it for a minute: the stream ends now, with no answer in it.
    expect(await streamEnded).not.toContain('"id":77');
    await fetch(mcpUrl(gw.url), { method: 'DELETE', headers: session });
  });

  // Regression: a batch's stream ends once the SDK has answered every request of it, so a batch holding a
  // cancelled request (MCP sends it no answer) kept its stream open and the session busy until the client left.
  it('ends the stream of a batch once every request in it is answered or cancelled', async () => {
    const headers = { authorization: `Bearer ${keys.exec}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    // Batches are protocol 2025-03-26's (2025-06-18 dropped them).
    const initialize = { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2025-03-26' } };
    const init = await fetch(mcpUrl(gw.url), { method: 'POST', headers, body: JSON.stringify(initialize) });
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': '2025-03-26' };
    await init.text();
    await fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const nap = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'nap', arguments: {} } });
    const batch = await fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify([nap(80), nap(81), { jsonrpc: '2.0', id: 82, method: 'ping' }]) });
    expect(batch.status).toBe(200);
    const reader = (batch.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    /** What the stream carries until `until` is in it, or until it ends (true) or stays silent `quietMs` (false). */
    const read = async (until: string | null, quietMs: number): Promise<boolean> => {
      while (until === null || !text.includes(until)) {
        const quiet = new Promise<'quiet'>((resolve) => setTimeout(() => resolve('quiet'), quietMs));
        const got = await Promise.race([reader.read(), quiet]);
        if (got === 'quiet') return false;
        if (got.done) return true;
        text += decoder.decode(got.value, { stream: true });
      }
      return false;
    };
    // The ping is answered at once; both naps would hold the stream for a minute.
    expect(await read('"id":82', 10_000)).toBe(false);
    const cancel = (id: number) => fetch(mcpUrl(gw.url), { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user' } }) });
    expect((await cancel(80)).status).toBe(202);
    // 81 is still under way: the stream stays open for its answer.
    expect(await read(null, 500)).toBe(false);
    expect((await cancel(81)).status).toBe(202);
    // Every request answered or cancelled: the stream ends now, with no answer to either nap.
    expect(await read(null, 10_000)).toBe(true);
    expect(text).not.toContain('"id":80');
    expect(text).not.toContain('"id":81');
    await fetch(mcpUrl(gw.url), { method: 'DELETE', headers: session });
  });

  it("does not let another key use a session's id", async () => {
    const id = mcp.transport.sessionId ?? '';
    const res = await fetch(mcpUrl(gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.execOnly}`, 'mcp-session-id': id, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
  });
});
