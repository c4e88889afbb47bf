/**
 * The MCP server's tests and bench: the official SDK client over real HTTP, and a reference agent with
 * MCP-visible tools (one read, one destructive, one hidden, one that does nothing).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { stringify } from 'yaml';
import { startAgentProcess, type AgentProcess } from './exec-agents.js';
import { mintJoinKey, PROJECT } from './exec-config.js';

const text = { type: 'object', properties: { text: { type: 'string', description: 'What to print' } }, required: ['text'] };
const target = { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] };
const nothing = { type: 'object', properties: {} };

export const MCP_MANIFEST = {
  description: 'MCP test agent',
  tools: {
    say: { command: ['printf', '%s', '{{text}}'], risk: 'read', description: 'Prints the text', mcp_visible: true, input_schema: text },
    wipe: { command: ['printf', '%s', 'wiped {{target}}'], risk: 'destructive', description: 'Pretends to wipe the target', mcp_visible: true, input_schema: target },
    hidden: { command: ['printf', '%s', 'secret'], risk: 'read', description: 'Not on MCP', input_schema: nothing },
    noop: { command: ['true'], risk: 'read', description: 'Does nothing', mcp_visible: true, input_schema: nothing },
    nap: { command: ['sleep', '60'], risk: 'read', description: 'Sleeps a minute (a call to cancel)', mcp_visible: true, input_schema: nothing },
  },
};

export const mcpUrl = (gatewayUrl: string, project = PROJECT): string => `${gatewayUrl}/${project}/v1/mcp`;

/** The reference agent (`switchboard agent`) enrolled with MCP_MANIFEST; resolves once enrolled. */
export async function startMcpAgent(gatewayUrl: string, managementKey: string, dir: string, name = 'mcp-agent'): Promise<AgentProcess> {
  const manifest = join(dir, `${name}.yaml`);
  writeFileSync(manifest, stringify({ ...MCP_MANIFEST, name }));
  const agent = startAgentProcess(['--url', `${gatewayUrl.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`, '--manifest', manifest], {
    SWITCHBOARD_JOIN_KEY: await mintJoinKey(gatewayUrl, managementKey),
  });
  await agent.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
  return agent;
}

export interface McpConnection {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/** An initialized MCP session with the SDK's client, authenticated with `key`. */
export async function connectMcp(gatewayUrl: string, key: string, headers: Record<string, string> = {}): Promise<McpConnection> {
  const client = new Client({ name: 'switchboard-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl(gatewayUrl)), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } });
  await client.connect(transport);
  return { client, transport };
}
