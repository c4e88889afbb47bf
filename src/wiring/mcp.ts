/**
 * The MCP server (docs/mcp.md): the execution tools over MCP, through the same invocations service; and
 * the RPC by which worker threads ask each other (issue 32): an MCP session's owner, every worker's
 * metrics for a scrape.
 */
import type { Config } from '../config.js';
import type { SharedCoordination } from '../coordination/coordination.js';
import { createWorkerRpc, workerRpcChannelName, type WorkerRpc } from '../coordination/worker-rpc.js';
import { isLoopbackHost } from '../mcp/origin-guard.js';
import { mcpRoutes, type McpRoutes } from '../routes/mcp.js';
import type { ExecParts } from './exec.js';

export function wireWorkerRpc(workerThreads: SharedCoordination | undefined): WorkerRpc | null {
  return workerThreads ? createWorkerRpc(workerRpcChannelName(workerThreads.channel), workerThreads.workerIndex, workerThreads.workers) : null;
}

export function wireMcp(config: Config, host: string, exec: ExecParts, workerRpc: WorkerRpc | null): McpRoutes {
  const mcpOrigins = { allowedHosts: config.exec.mcp_allowed_hosts, allowedOrigins: config.exec.mcp_allowed_origins, listensOnLoopback: isLoopbackHost(host) };
  const sessionCaps = config.exec.mcp_sessions;
  const mcpSessionLimits = { maxPerKey: sessionCaps.per_key, maxPerProject: sessionCaps.per_project, maxSessions: sessionCaps.total };
  return mcpRoutes({ ...exec.execServices, agents: exec.agents.registry, mcpOrigins, maxBodyBytes: config.server.max_body_bytes, mcpSessionLimits, workerRpc });
}
