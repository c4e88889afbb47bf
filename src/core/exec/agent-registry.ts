/**
 * The seam between the two halves of the execution surface (docs/exec.md): the agents' side (the
 * WebSocket protocol, enrollment, leases: src/exec/agents/) keeps the registry of online agents; the
 * invocations' side (routes, approvals, dispatch: src/exec/invocations/) reads it to dispatch and hears
 * from it what agents report. Neither imports the other's modules, only this file.
 */

export type ToolRisk = 'read' | 'write' | 'destructive';

export interface ExecTool {
  readonly name: string;
  readonly description: string;
  /** A JSON Schema object; invocation arguments are validated against it (ajv). */
  readonly input_schema: Record<string, unknown>;
  readonly risk: ToolRisk;
  readonly mcp_visible: boolean;
}

export interface OnlineAgent {
  readonly id: string;
  readonly projectId: string;
  readonly registrationName: string;
  /** Workspaces served; empty: every workspace of the project. */
  readonly workspaceIds: readonly string[];
  readonly tools: ReadonlyMap<string, ExecTool>;
  /** Invocations dispatched to it and not finished. */
  readonly running: number;
}

export interface DispatchMessage {
  readonly invocationId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly timeoutMs: number;
}

/**
 * Why an agent went offline (the `reason` of `exec.agent_offline`). `gateway_stopping`: a graceful stop
 * reached its drain deadline while the agent still ran invocations (docs/exec.md "Graceful stop").
 */
export type AgentOfflineReason = 'lease_expired' | 'disconnected' | 'deleted' | 'gateway_stopping';

/** What agents report, delivered to the invocations' side (which may apply them asynchronously: a rejection is a report error). */
export interface AgentReports {
  output(agentId: string, invocationId: string, data: string): void | Promise<void>;
  result(agentId: string, invocationId: string, result: { exitCode: number; output: string | null; error: string | null; outputTruncated?: boolean }): void | Promise<void>;
  /** The agent went offline; `running` are the invocations it had not finished. */
  offline(agent: { readonly id: string; readonly projectId: string }, reason: AgentOfflineReason, running: readonly string[]): void | Promise<void>;
  /** An agent enrolled or reconnected: queued invocations may now find it. */
  online(agentId: string): void | Promise<void>;
}

export interface AgentRegistry {
  /** Online agents of the project serving `workspaceId` whose manifest has the tool, least busy first. */
  candidates(projectId: string, workspaceId: string, toolName: string): readonly OnlineAgent[];
  /** Every online agent of the project serving the workspace (null: whatever workspace it serves). */
  online(projectId: string, workspaceId: string | null): readonly OnlineAgent[];
  /** Sends the invocation to the agent; false when it is no longer online. Counts it as running. */
  dispatch(agentId: string, message: DispatchMessage): boolean;
  /** Tells the agent to stop an invocation (best effort) and stops counting it. */
  cancel(agentId: string, invocationId: string): void;
  /** The invocations' side subscribes once, at start. */
  subscribe(reports: AgentReports): void;
}
