/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.13, its CLI, offline) against our MCP
 * server: a real gateway, the reference agent with the tools the suite's tool scenarios call, and a small
 * proxy that adds the API key (the suite's client sends no headers of its own; an MCP client configured
 * with headers does the same). The proxy forwards Host and Origin untouched, so the suite's DNS-rebinding
 * scenario reaches our guard as it sent them. Every scenario of the active suite runs; the ones a
 * tools-only server does not serve are listed with the reason (docs/mcp.md "Conformance").
 */
import { execFile } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentProcess, type AgentProcess } from '../helpers/exec-agents.js';
import { execConfig, makeExecKeys, mintJoinKey, PROJECT } from '../helpers/exec-config.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';

const CLI = join(process.cwd(), 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/** Must pass. */
const REQUIRED = ['server-initialize', 'ping', 'tools-list', 'tools-call-simple-text', 'tools-call-error', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/** Scenarios of the active suite this server does not serve, and why (kept in step with docs/mcp.md). */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no logging capability: invocation output is the tool result',
  'completion-complete': 'no prompts or resource templates, so no completions',
  'tools-call-image': 'agent tools answer text (command output)',
  'tools-call-audio': 'agent tools answer text (command output)',
  'tools-call-embedded-resource': 'agent tools answer text (command output)',
  'tools-call-mixed-content': 'agent tools answer text (command output)',
  'tools-call-with-logging': 'no logging capability',
  'tools-call-with-progress': 'no progress notifications: a call waits for its invocation, a destructive one answers at once',
  'tools-call-sampling': 'the server never calls back into the client (no sampling)',
  'tools-call-elicitation': 'the server never calls back into the client (no elicitation): approvals are the human step',
  'elicitation-sep1034-defaults': 'no elicitation',
  'elicitation-sep1330-enums': 'no elicitation',
  'resources-list': 'tools only: no resources',
  'resources-read-text': 'tools only: no resources',
  'resources-read-binary': 'tools only: no resources',
  'resources-templates-read': 'tools only: no resources',
  'resources-subscribe': 'tools only: no resources',
  'resources-unsubscribe': 'tools only: no resources',
  'prompts-list': 'tools only: no prompts',
  'prompts-get-simple': 'tools only: no prompts',
  'prompts-get-with-args': 'tools only: no prompts',
  'prompts-get-embedded-resource': 'tools only: no prompts',
  'prompts-get-with-image': 'tools only: no prompts',
};

/** The tools the suite's tool scenarios call, as commands of the reference agent. */
const MANIFEST = {
  name: 'conformance',
  tools: {
    test_simple_text: { command: ['printf', '%s', 'This is a simple text response for testing.'], risk: 'read', mcp_visible: true, input_schema: { type: 'object' } },
    test_error_handling: { command: ['sh', '-c', "echo 'This tool intentionally returns an error for testing' >&2; exit 1"], risk: 'read', mcp_visible: true, input_schema: { type: 'object' } },
  },
};

const keys = makeExecKeys();
let gw: GatewayProcess;
let agent: AgentProcess;
let proxy: Server;

/** Forwards every request to the gateway with the API key added; nothing else changes. */
function keyProxy(target: URL, key: string): Promise<Server> {
  const server = createServer((req, res) => {
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${key}` } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function runSuite(url: string): Promise<string> {
  return new Promise((resolve) => {
    // Exit code 1 whenever a scenario fails: the summary is what we judge.
    execFile(process.execPath, [CLI, 'server', '--url', url, '-o', tempDir()], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (_err, stdout, stderr) => resolve(`${stdout}\n${stderr}`));
  });
}

/** `✓ ping: 1 passed, 0 failed` lines of the summary. */
function summary(output: string): Map<string, { ok: boolean; passed: number; failed: number }> {
  const rows = new Map<string, { ok: boolean; passed: number; failed: number }>();
  for (const m of output.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed$/gmu)) {
    rows.set(m[2] ?? '', { ok: m[1] === '✓', passed: Number(m[3]), failed: Number(m[4]) });
  }
  return rows;
}

beforeAll(async () => {
  gw = await startGatewayProcess(execConfig(keys));
  const manifest = join(tempDir(), 'conformance.yaml');
  writeFileSync(manifest, stringify(MANIFEST));
  agent = startAgentProcess(['--url', `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`, '--manifest', manifest], {
    SWITCHBOARD_JOIN_KEY: await mintJoinKey(gw.url, keys.exec),
  });
  await agent.waitFor(/enrolled as agt_/);
  proxy = await keyProxy(new URL(gw.url), keys.exec);
});

afterAll(async () => {
  await new Promise((r) => proxy?.close(r));
  await agent?.stop('SIGKILL');
  await gw?.stop();
});

describe('the MCP conformance suite (server scenarios)', () => {
  it('passes server-initialize, ping, tools-list, the tool calls and DNS-rebinding protection; every other scenario is one a tools-only server does not serve', async () => {
    const port = (proxy.address() as AddressInfo).port;
    const output = await runSuite(`http://127.0.0.1:${port}/${PROJECT}/v1/mcp`);
    const rows = summary(output);
    expect(rows.size, output).toBeGreaterThan(0);
    for (const name of REQUIRED) {
      const row = rows.get(name);
      expect(row, `${name} missing from the summary:\n${output}`).toBeDefined();
      expect(row?.ok && row.passed > 0 && row.failed === 0, `${name}: ${JSON.stringify(row)}`).toBe(true);
    }
    const unexpected = [...rows].filter(([name, r]) => !r.ok && !(name in NOT_APPLICABLE)).map(([name]) => name);
    expect(unexpected, 'scenarios failing that are neither required nor listed as not applicable').toEqual([]);
    // A listed scenario that starts passing means the list (and docs/mcp.md) is stale.
    const stale = Object.keys(NOT_APPLICABLE).filter((name) => rows.get(name)?.ok === true);
    expect(stale).toEqual([]);
  });
});
