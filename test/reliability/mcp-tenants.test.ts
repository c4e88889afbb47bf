/**
 * Reproductions of the MCP findings of the hostile-callers probe (issue 31), against a real gateway over
 * raw HTTP:
 * - one project's flood of `initialize` calls closed another project's session (one 10,000-session LRU for
 *   every tenant): here with a process-wide cap of 6 (config `exec.mcp_sessions`) instead of 10,001 calls;
 * - one POST batching N `tools/call` (protocol 2025-03-26) was charged one unit of the rate limit;
 * - invalid `tools/call` params were -32603 with zod's raw issue list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execConfig, makeExecKeys, OTHER_PROJECT, PROJECT } from '../helpers/exec-config.js';
import { mcpUrl } from '../helpers/mcp-client.js';
import { mintTestKey, startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';

const keys = makeExecKeys();
/** execution, 20 requests per minute: the ceiling the batch tests count against. */
const quotaKey = mintTestKey('test');
const QUOTA = 20;
let gw: GatewayProcess;

const VERSION = '2025-03-26';
const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'probe', version: '1' } } };

interface RpcMessage {
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: { error: { code: string; param: string | null; retry_after?: number } } };
}

interface Answer {
  status: number;
  headers: Headers;
  messages: RpcMessage[];
}

/** One POST to the MCP endpoint; its SSE `data:` lines (or JSON body) as JSON-RPC messages. */
async function post(key: string, body: unknown, sessionId?: string, project = PROJECT): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (sessionId !== undefined) Object.assign(headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': VERSION });
  const res = await fetch(mcpUrl(gw.url, project), { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  const messages = res.headers.get('content-type')?.startsWith('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as RpcMessage)
    : text === '' ? [] : [JSON.parse(text) as RpcMessage];
  return { status: res.status, headers: res.headers, messages };
}

async function initialize(key: string, project = PROJECT): Promise<string> {
  const res = await post(key, INITIALIZE, undefined, project);
  expect(res.status, JSON.stringify(res.messages)).toBe(200);
  return res.headers.get('mcp-session-id') ?? '';
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const byId = (messages: RpcMessage[]): RpcMessage[] => [...messages].sort((a, b) => Number(a.id) - Number(b.id));

beforeAll(async () => {
  const config = execConfig(keys, { exec: { mcp_sessions: { per_key: 6, per_project: 6, total: 6 } } });
  (config.projects[0] as unknown as { keys: Record<string, unknown>[] }).keys.push({ value: quotaKey, scopes: ['execution'], quota_requests: QUOTA, quota_window: 60 });
  gw = await startGatewayProcess(config);
});

afterAll(async () => {
  await gw?.stop();
});

describe('MCP sessions under another tenant’s flood', () => {
  it("keeps project A's session through project B's initialize flood past the process-wide cap; B's own go instead", async () => {
    const a = await initialize(keys.exec);
    const floods: string[] = [];
    for (let i = 0; i < 12; i++) floods.push(await initialize(keys.otherExec, OTHER_PROJECT));
    const listed = await post(keys.exec, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, a);
    expect(listed.status).toBe(200);
    expect(listed.messages[0]?.result?.['tools']).toBeDefined();
    // B's first sessions made room for its later ones.
    expect((await post(keys.otherExec, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, floods[0], OTHER_PROJECT)).status).toBe(404);
    expect((await post(keys.otherExec, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, floods[11], OTHER_PROJECT)).status).toBe(200);
  });
});

describe('MCP batches and the rate limit', () => {
  it('charges each tools/call of a batch one unit, and answers the calls past the allowance with a JSON-RPC rate-limit error', async () => {
    const sid = await initialize(quotaKey);
    const five = await post(quotaKey, [1, 2, 3, 4, 5].map((id) => call(id, 'exec.approvals_list')), sid);
    expect(five.status).toBe(200);
    expect(five.messages.filter((m) => m.result !== undefined)).toHaveLength(5);
    // initialize, then five calls: six units of twenty.
    expect(five.headers.get('ratelimit-remaining')).toBe(String(QUOTA - 6));

    const many = await post(quotaKey, Array.from({ length: 16 }, (_, i) => call(i + 1, 'exec.approvals_list')), sid);
    const answers = byId(many.messages);
    expect(answers).toHaveLength(16);
    expect(answers.slice(0, QUOTA - 6).every((m) => m.result !== undefined)).toBe(true);
    for (const refused of answers.slice(QUOTA - 6)) {
      expect(refused.error).toMatchObject({ code: -32000, data: { error: { code: 'rate_limit_exceeded', param: null } } });
      expect(refused.error?.message).toMatch(/^The API key's quota of 20 requests per 60 s is reached; retry in \d+ s\.$/);
      expect(refused.error?.data?.error.retry_after).toBeGreaterThan(0);
    }
    expect(many.headers.get('ratelimit-remaining')).toBe('0');
    // The next POST is refused whole, as any request past the quota.
    expect((await post(quotaKey, call(1, 'exec.approvals_list'), sid)).status).toBe(429);
  });
});

describe('MCP tools/call params', () => {
  it('answers params that fail MCP\'s schema with -32602 naming the param, in a batch beside a call that runs', async () => {
    const sid = await initialize(keys.exec);
    const res = await post(
      keys.exec,
      [
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 5 } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'exec.approvals_list', arguments: [1, 2] } },
        { jsonrpc: '2.0', id: 3, method: 'tools/call' },
        call(4, 'exec.approvals_list'),
      ],
      sid,
    );
    const [name, args, missing, ok] = byId(res.messages);
    expect(name?.error).toEqual({
      code: -32602,
      message: 'Invalid params: params.name must be a string; got 5.',
      data: { error: { message: 'params.name must be a string; got 5.', type: 'invalid_request_error', code: 'invalid_body', param: 'params.name' } },
    });
    expect(args?.error).toMatchObject({ code: -32602, message: 'Invalid params: params.arguments must be a JSON object; got an array of 2 items.' });
    expect(missing?.error).toMatchObject({ code: -32602, message: 'Invalid params: params must be a JSON object; got nothing.', data: { error: { param: 'params' } } });
    expect(ok?.result).toMatchObject({ isError: false });
  });

  it('answers a single invalid tools/call alone (no batch) the same way', async () => {
    const sid = await initialize(keys.exec);
    const res = await post(keys.exec, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { arguments: {} } }, sid);
    expect(res.status).toBe(200);
    expect(res.messages).toEqual([
      expect.objectContaining({ id: 7, error: expect.objectContaining({ code: -32602, message: 'Invalid params: params.name must be a string; got nothing.' }) }),
    ]);
  });
});
