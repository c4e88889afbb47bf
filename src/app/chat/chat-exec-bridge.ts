/**
 * The chat tool bridge's loop (issue 13, docs/exec.md "Chat tool bridge"): a chat request with
 * `x_exec: true` offers the workspace's execution tools next to the client's, runs the calls the model
 * makes on them through the invocations service, and asks the model again with the results, until it
 * answers without calling one (or calls a client tool, or the output cap or the turn bound is reached).
 *
 * Every upstream turn is buffered (non-streaming) and billed with a usage row of its own; the answer is
 * sent once it is whole, as JSON or, for a streaming request, as SSE chunks. Requests without `x_exec`
 * never reach this module (chat-turn.ts checks one property).
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import type { Deadlines } from '../../core/chat/deadlines.js';
import {
  addUsage,
  argumentsOf,
  checkClientTools,
  clientFacing,
  completionChunks,
  functionTools,
  historyMessage,
  isExecCall,
  MAX_BRIDGE_TURNS,
  EXEC_TOOL_PREFIX,
  refused,
  remainingCap,
  toolCallsOf,
  toolMessage,
  type ExecToolRunner,
} from '../../core/chat/exec-bridge.js';
import type { TurnContext } from '../../core/chat/turn-context.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import type { TurnCaller, TurnSink } from '../turn-io.js';
import type { ChatServices } from './chat-dispatch.js';
import { exchangeOnce } from './chat-harness-call.js';

type Json = Record<string, unknown>;

export interface ExecOptIn {
  /** `x_exec: true`; false when the client sent `x_exec: false` (served as a plain turn). */
  readonly on: boolean;
  readonly workspaceId: string | null;
  /** The body without `x_exec`, which is never forwarded upstream. */
  readonly raw: Buffer;
  readonly parsed: Json;
}

/**
 * Reads `x_exec` (present: the caller checked). SPEC Authentication 2 and the exec error table: the key
 * needs `execution` as well as `inference`, the request a workspace (the tools are a workspace's). All
 * checked before anything reaches a model.
 */
export function execOptIn(parsed: Json, auth: AuthenticatedKey, workspaceId: string | null, chat: ChatRequest, runner: ExecToolRunner | undefined, model: EndpointRecord['model']): ExecOptIn {
  const { x_exec: flag, ...rest } = parsed;
  if (typeof flag !== 'boolean' && flag !== null) throw new GatewayError('invalid_request', { param: 'x_exec', message: 'x_exec must be a boolean.' });
  // Re-serialized without the field: the rest of the body means what the client sent.
  const stripped = { on: flag === true, workspaceId, raw: Buffer.from(JSON.stringify(rest)), parsed: rest };
  if (!stripped.on) return stripped;
  if (!auth.key.scopes.includes('execution')) {
    throw new GatewayError('scope_insufficient', {
      param: 'x_exec',
      message: `x_exec needs the execution scope as well as inference; the API key has ${auth.key.scopes.join(', ')}.`,
    });
  }
  if (workspaceId === null) {
    throw new GatewayError('missing_workspace_id', { param: 'x_exec', message: 'x_exec runs tools of a workspace: name one (X-Workspace-Id, or a ws_ path segment on router routes).' });
  }
  if (!runner) throw new GatewayError('unavailable', { message: 'The execution surface is not running in this gateway.' });
  // SPEC exec error table: the tools are offered to the model, which must be able to call them.
  if (!model.capabilities.includes('tools')) {
    throw new GatewayError('model_capability_missing', {
      param: 'x_exec',
      message: `x_exec offers the workspace's execution tools, but model ${model.id} does not support tool calling (its capabilities lack "tools"); send the turn without x_exec or to a tool-calling model.`,
    });
  }
  if ((chat.n ?? 1) > 1) throw new GatewayError('unsupported_value', { param: 'n', message: 'x_exec serves one choice: n must be 1.' });
  if (chat.modalities?.includes('audio')) throw new GatewayError('unsupported_value', { param: 'modalities', message: 'x_exec answers in text: audio output is not available with it.' });
  checkClientTools(chat.tools ?? undefined);
  return stripped;
}

export interface BridgeInput {
  readonly req: TurnCaller;
  readonly reply: TurnSink;
  readonly endpoint: EndpointRecord;
  /** The upstream body as a direct turn would send it (model replaced, clamps applied), without x_exec. */
  readonly base: Json;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly turn: TurnContext;
  readonly deadlines: Deadlines;
  readonly account: { projectId: string; workspaceId: string; keyId: string; multiplier: number };
  readonly route: string;
}

export async function serveBridgedTurn(services: ChatServices, runner: ExecToolRunner, b: BridgeInput): Promise<void> {
  try {
    await bridgeLoop(services, runner, b);
  } catch (err) {
    // The client is gone: nothing to answer (each turn was already billed as it ended).
    if (!b.req.aborted) throw err;
  }
}

async function bridgeLoop(services: ChatServices, runner: ExecToolRunner, b: BridgeInput): Promise<void> {
  const { projectId, workspaceId } = b.account;
  const offer = runner.offer(projectId, workspaceId);
  const execTools = functionTools(offer);
  const clientTools = Array.isArray(b.base.tools) ? (b.base.tools as unknown[]) : null;
  // SPEC Passthrough 3: the client's cap (max_completion_tokens wins) bounds the output of all turns.
  const capField = typeof b.base.max_completion_tokens === 'number' ? 'max_completion_tokens' : typeof b.base.max_tokens === 'number' ? 'max_tokens' : null;
  const cap = capField ? (b.base[capField] as number) : null;
  const messages = Array.isArray(b.base.messages) ? [...(b.base.messages as unknown[])] : [];
  let usage: Json | null = null;
  let spent = 0;

  for (let index = 0; ; index++) {
    // The last turn is offered no execution tool: the model has to answer.
    const last = index === MAX_BRIDGE_TURNS - 1;
    const body: Json = { ...b.base, messages, stream: false };
    delete body.stream_options;
    if (execTools.length > 0 && !last) body.tools = [...(clientTools ?? []), ...execTools];
    const left = remainingCap(cap, spent);
    if (capField && left !== null) body[capField] = left;
    // Rows are keyed `<request id>` for the first turn and `<request id>.t<k>` for turn k (2, 3, ...): one
    // row per model turn, all found by the request id's prefix.
    const { completion } = await exchangeOnce(services, b, Buffer.from(JSON.stringify(body)), index === 0 ? null : `t${index + 1}`);
    const turnUsage = completion.usage as Json;
    usage = usage ? addUsage(usage, turnUsage) : turnUsage;
    spent += typeof turnUsage.completion_tokens === 'number' ? turnUsage.completion_tokens : 0;
    const choice = ((completion.choices as Json[] | undefined) ?? [])[0] ?? {};
    const message = (choice.message ?? {}) as Json;
    const calls = toolCallsOf(message);
    const ours = calls.filter((c) => isExecCall(c.name));
    // A call on a client tool ends the loop: the client runs it (its own calls come back as usual).
    if (ours.length === 0 || ours.length < calls.length || last) return answer(b, completion, clientFacing(choice, null), usage);
    if (cap !== null && spent >= cap) return answer(b, completion, clientFacing(choice, 'length'), usage);
    messages.push(historyMessage(message));
    for (const call of ours) {
      const tool = offer.get(call.name.slice(EXEC_TOOL_PREFIX.length));
      const args = argumentsOf(call);
      const outcome = !tool
        ? refused('exec_tool_not_found', `${call.name} is not one of the execution tools offered to this turn.`)
        : args === null
          ? refused('invalid_body', 'The arguments are not a JSON object.')
          : await runner.run({ projectId, workspaceId, toolName: tool.name, arguments: args, onAbort: (l) => b.req.onAbort(l) });
      if (b.req.aborted) return;
      messages.push(toolMessage(call, outcome));
    }
  }
}

function answer(b: BridgeInput, completion: Json, choice: Json, usage: Json | null): void {
  const body: Json = { ...completion, choices: [choice], usage };
  b.req.log.promptTokens = typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
  b.req.log.completionTokens = typeof usage?.completion_tokens === 'number' ? usage.completion_tokens : 0;
  if (!b.stream) return b.reply.json(200, body);
  b.reply.setHeader('Cache-Control', 'no-cache');
  b.reply.beginStream(200, 'text/event-stream');
  let out = '';
  for (const chunk of completionChunks(body, b.includeUsage)) out += `data: ${JSON.stringify(chunk)}\n\n`;
  b.reply.write(`${out}data: [DONE]\n\n`);
  b.reply.endStream();
}
