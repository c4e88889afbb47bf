/**
 * The MCP session table's caps (issue 31: one project's 10,001 `initialize` calls closed another project's
 * session and cancelled its running call): a key or project past its cap gives up its own least recently
 * used idle session, a busy one never, and nobody else's; all busy is 429 mcp_session_limit_reached.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { McpSessions, type McpSession, type McpSessionLimits } from '../../../src/mcp/mcp-sessions.js';

const LIMITS: McpSessionLimits = { idleMs: 60_000, maxSessions: 6, maxPerProject: 4, maxPerKey: 2 };

function table(limits: McpSessionLimits = LIMITS) {
  const closed: string[] = [];
  const sessions = new McpSessions(() => 0, limits);
  let n = 0;
  const open = (projectId: string, keyId: string): McpSession => {
    const id = `s${(n += 1)}`;
    const server = { close: async () => void closed.push(id) } as unknown as Server;
    const session: McpSession = { server, transport: {} as WebStandardStreamableHTTPServerTransport, projectId, keyId, lastUsedAt: 0, inFlight: 0 };
    sessions.reserve(projectId, keyId).commit(id, session);
    return session;
  };
  return { sessions, closed, open };
}

const refusalOf = (fn: () => unknown): GatewayError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('MCP session caps', () => {
  it("closes the key's own least recently used idle session past its cap, never a busy one", () => {
    const t = table();
    const busy = t.open('proj_a', 'key_1');
    busy.inFlight = 1;
    t.open('proj_a', 'key_1');
    t.open('proj_a', 'key_1');
    // s2 (idle) went; s1 holds a running call and stays.
    expect(t.closed).toEqual(['s2']);
    expect(t.sessions.use('s1', 'proj_a', 'key_1')).toBe(busy);
  });

  it('refuses a new session with 429 mcp_session_limit_reached when every session of the key is busy', () => {
    const t = table();
    t.open('proj_a', 'key_1').inFlight = 1;
    t.open('proj_a', 'key_1').inFlight = 1;
    const e = refusalOf(() => t.sessions.reserve('proj_a', 'key_1'));
    expect(e).toMatchObject({ code: 'mcp_session_limit_reached', status: 429 });
    expect(e.message).toMatch(/^This API key holds 2 MCP sessions, each with a request under way: end one/);
    expect(e.extra).toMatchObject({ retry_after: 1 });
    expect(t.closed).toEqual([]);
  });

  it("at the process-wide cap, closes an idle session of the same project, never another project's", () => {
    const t = table({ ...LIMITS, maxSessions: 3, maxPerKey: 10, maxPerProject: 10 });
    t.open('proj_a', 'key_a');
    t.open('proj_a', 'key_a');
    t.open('proj_b', 'key_b');
    // A flood by project B: each new session replaces B's own, A's two stay.
    for (let i = 0; i < 20; i++) t.open('proj_b', 'key_b');
    expect(t.closed).not.toContain('s1');
    expect(t.closed).not.toContain('s2');
    expect(t.sessions.size).toBe(3);
    expect(t.sessions.use('s1', 'proj_a', 'key_a')).not.toBeNull();
  });

  it('refuses at the process-wide cap when the project holds none of its own to close', () => {
    const t = table({ ...LIMITS, maxSessions: 2, maxPerKey: 10, maxPerProject: 10 });
    t.open('proj_a', 'key_a');
    t.open('proj_a', 'key_a');
    expect(refusalOf(() => t.sessions.reserve('proj_b', 'key_b')).message).toMatch(/^This server holds 2 MCP sessions, the most it may/);
    expect(t.closed).toEqual([]);
  });

  it('counts a reserved place until it is committed or released, so concurrent initializes cannot overshoot', () => {
    const t = table();
    const first = t.sessions.reserve('proj_a', 'key_1');
    t.sessions.reserve('proj_a', 'key_1');
    expect(refusalOf(() => t.sessions.reserve('proj_a', 'key_1')).code).toBe('mcp_session_limit_reached');
    first.release();
    expect(() => t.sessions.reserve('proj_a', 'key_1')).not.toThrow();
  });

  it('does not sweep an idle-timed-out session whose call is still running', () => {
    let now = 0;
    const sessions = new McpSessions(() => now, LIMITS);
    const closed: string[] = [];
    const make = (id: string, inFlight: number): void => {
      const server = { close: async () => void closed.push(id) } as unknown as Server;
      sessions.reserve('proj_a', `key_${id}`).commit(id, { server, transport: {} as WebStandardStreamableHTTPServerTransport, projectId: 'proj_a', keyId: `key_${id}`, lastUsedAt: 0, inFlight });
    };
    make('busy', 1);
    make('idle', 0);
    now = LIMITS.idleMs + 1;
    sessions.sweep();
    expect(closed).toEqual(['idle']);
    expect(sessions.size).toBe(1);
  });
});
