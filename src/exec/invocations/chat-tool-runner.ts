/**
 * The chat tool bridge's port onto the execution surface (docs/exec.md "Chat tool bridge"): the tools a
 * bridged turn may offer, and one run of a tool through the invocations service, exactly as POST
 * /v1/exec/invocations creates it (schema check, events, dispatch, timeout), waited for to its end.
 *
 * A tool that needs an approval (destructive, or in the workspace's approval_required_tools) is neither
 * offered nor run: a chat request cannot hold a human's decision for up to the approval chain's length,
 * and a model must not be the one to put a destructive command in front of an approver.
 */
import type { AgentRegistry, ExecTool } from '../../core/exec/agent-registry.js';
import { needsApproval, NO_REQUESTER, type ApprovalPolicy } from '../../core/exec/approval-machine.js';
import { isTerminal, type Invocation } from '../../core/exec/invocation-machine.js';
import { refused, type ExecToolRunner, type ToolRunOutcome, type ToolRunRequest } from '../../core/chat/exec-bridge.js';
import { GatewayError } from '../../errors.js';
import type { InvocationService } from './invocation-service.js';
import { settled } from './invocation-settled.js';

export interface ChatToolRunnerDeps {
  readonly service: InvocationService;
  readonly registry: AgentRegistry;
  readonly policyOf: (projectId: string, workspaceId: string) => ApprovalPolicy;
  /** config `exec.default_timeout_ms`: each bridged invocation's timeout. */
  readonly timeoutMs: number;
}

export function createChatToolRunner(deps: ChatToolRunnerDeps): ExecToolRunner {
  const { service, registry, policyOf, timeoutMs } = deps;
  return {
    offer(projectId, workspaceId) {
      const policy = policyOf(projectId, workspaceId);
      const tools = new Map<string, ExecTool>();
      // Least busy agent first (the registry's order): its definition is the one a run is validated against.
      for (const agent of registry.online(projectId, workspaceId)) {
        for (const tool of agent.tools.values()) {
          if (!tools.has(tool.name) && !needsApproval(tool.risk, tool.name, policy)) tools.set(tool.name, tool);
        }
      }
      return tools;
    },
    async run(req) {
      const tool = registry.candidates(req.projectId, req.workspaceId, req.toolName)[0]?.tools.get(req.toolName);
      if (!tool) {
        throw new GatewayError('tool_executor_unavailable', {
          message: `The model called the execution tool ${JSON.stringify(req.toolName)}, but no agent serving workspace ${req.workspaceId} is online with it.`,
        });
      }
      if (needsApproval(tool.risk, tool.name, policyOf(req.projectId, req.workspaceId))) {
        return refused('approval_required', `${tool.name} needs an approval and is not run from chat; use POST /v1/exec/invocations.`);
      }
      let invocation: Invocation;
      try {
        // The same agent list as the lookup above unless an agent left in between (then: not found).
        // NO_REQUESTER: a bridged run never waits for an approval (checked above), so none records who asked.
        invocation = (await service.create({ projectId: req.projectId, workspaceId: req.workspaceId, toolName: tool.name, arguments: req.arguments, timeoutMs, idempotency: null, requester: NO_REQUESTER })).invocation;
      } catch (err) {
        // The model's arguments failed the tool's schema: the model reads why and may try again.
        if (err instanceof GatewayError && err.code === 'invalid_body') return refused(err.code, `${err.message}${err.param ? ` (${err.param})` : ''}`);
        throw err;
      }
      return outcomeOf(await settledRun(service, invocation, req));
    },
  };
}

/** Waits for the invocation's terminal state; the client's abort cancels it. */
function settledRun(service: InvocationService, first: Invocation, req: ToolRunRequest): Promise<Invocation> {
  const aborted = new AbortController();
  req.onAbort(() => aborted.abort());
  return settled(service, first, aborted.signal);
}

function outcomeOf(inv: Invocation): ToolRunOutcome {
  return { invocationId: inv.id, status: inv.status, exitCode: inv.exitCode, output: inv.output, outputTruncated: inv.outputTruncated, error: inv.error };
}
