/**
 * A scripted execution agent for API tests: speaks docs/exec.md's agent protocol over a real WebSocket
 * (the `ws` package) and lets the test decide what each dispatched invocation does (output, result,
 * silence), or dies abruptly (the socket destroyed, no close frame) like a killed process.
 */
import WebSocket from 'ws';

export interface ToolSpec {
  readonly name: string;
  readonly description?: string;
  readonly input_schema?: Record<string, unknown>;
  readonly risk?: 'read' | 'write' | 'destructive';
  readonly mcp_visible?: boolean;
}

export interface Dispatch {
  readonly invocation_id: string;
  readonly tool_name: string;
  readonly arguments: Record<string, unknown>;
  readonly timeout_ms: number;
}

export interface TestAgent {
  readonly agentId: string;
  readonly agentKey: string | null;
  readonly dispatches: Dispatch[];
  readonly cancels: string[];
  /** What to do with each dispatch as it arrives (default: nothing; the test answers). */
  onDispatch(handler: (d: Dispatch) => void): void;
  output(invocationId: string, data: string): void;
  result(invocationId: string, exitCode: number, extra?: { output?: string; error?: string }): void;
  waitForDispatch(count?: number, timeoutMs?: number): Promise<Dispatch>;
  waitForCancel(invocationId: string, timeoutMs?: number): Promise<void>;
  /** Resolves when the gateway sends `draining` (a graceful stop began). */
  waitForDraining(timeoutMs?: number): Promise<void>;
  /** Resolves when the socket closes, with the close code and reason (either side's close). */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** A clean close (the gateway sees the socket close: reason disconnected). */
  close(): Promise<void>;
  /** The TCP connection destroyed without a close frame, as when the process is killed. */
  kill(): void;
}

export interface AgentOptions {
  readonly name: string;
  readonly tools: readonly ToolSpec[];
  readonly workspaceIds?: readonly string[];
  /** Heartbeats in real time (the lease runs on the gateway's clock). Default 1000 ms. */
  readonly heartbeatMs?: number;
}

export const echoTool: ToolSpec = { name: 'echo', description: 'Prints its text', input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, risk: 'read' };

function wsUrl(gatewayUrl: string, project: string): string {
  return `${gatewayUrl.replace(/^http/, 'ws')}/${project}/v1/exec/agents/connect`;
}

async function waitUntil<T>(get: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`test agent: ${what} never came`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export async function connectTestAgent(gatewayUrl: string, project: string, credential: string, options: AgentOptions): Promise<TestAgent> {
  const ws = new WebSocket(wsUrl(gatewayUrl, project), { headers: { authorization: `Bearer ${credential}` } });
  const dispatches: Dispatch[] = [];
  const cancels: string[] = [];
  let draining = false;
  let handler: (d: Dispatch) => void = () => undefined;
  const send = (m: Record<string, unknown>): void => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
  };

  const enrolled = new Promise<{ agent_id: string; agent_key?: string }>((resolve, reject) => {
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as Record<string, unknown>;
      if (m.type === 'enrolled') resolve(m as { agent_id: string; agent_key?: string });
      else if (m.type === 'error') reject(new Error(`enrollment refused: ${String(m.code)} ${String(m.message)}`));
      else if (m.type === 'invocation.dispatch') {
        const d = m as unknown as Dispatch;
        dispatches.push(d);
        handler(d);
      } else if (m.type === 'invocation.cancel') cancels.push(String(m.invocation_id));
      else if (m.type === 'draining') draining = true;
    });
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  send({
    type: 'enroll',
    registration_name: options.name,
    ...(options.workspaceIds ? { workspace_ids: options.workspaceIds } : {}),
    manifest: { tools: options.tools.map((t) => ({ description: `the ${t.name} tool`, input_schema: { type: 'object' }, risk: 'read', mcp_visible: true, ...t })) },
  });
  const hello = await enrolled;
  const beat = setInterval(() => send({ type: 'heartbeat' }), options.heartbeatMs ?? 1000);
  beat.unref();
  ws.on('close', () => clearInterval(beat));

  return {
    agentId: hello.agent_id,
    agentKey: hello.agent_key ?? null,
    dispatches,
    cancels,
    onDispatch(h) {
      handler = h;
    },
    output: (invocationId, data) => send({ type: 'invocation.output', invocation_id: invocationId, data }),
    result: (invocationId, exitCode, extra = {}) => send({ type: 'invocation.result', invocation_id: invocationId, exit_code: exitCode, ...extra }),
    waitForDispatch: (count = 1, timeoutMs = 5000) => waitUntil(() => dispatches[count - 1], `dispatch #${count}`, timeoutMs),
    waitForCancel: async (invocationId, timeoutMs = 5000) => {
      await waitUntil(() => (cancels.includes(invocationId) ? true : undefined), `cancel of ${invocationId}`, timeoutMs);
    },
    waitForDraining: async (timeoutMs = 5000) => {
      await waitUntil(() => (draining ? true : undefined), 'draining', timeoutMs);
    },
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(beat);
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        ws.close(1000, 'bye');
      }),
    kill() {
      clearInterval(beat);
      ws.terminate();
    },
  };
}
