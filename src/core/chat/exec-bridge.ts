/**
 * The chat tool bridge (issue 13, docs/exec.md "Chat tool bridge"), its pure parts: which execution tools a
 * bridged turn offers the model and under which names, which of the model's tool calls are ours, the
 * messages that carry a run's result back, the cumulative output cap (SPEC Passthrough 3), the summed
 * usage, and the SSE rendering of a finished answer. The loop that calls the model and runs the tools is
 * app/chat/chat-exec-bridge.ts; the tools run through the port `ExecToolRunner`.
 */
import type { ExecTool } from '../exec/agent-registry.js';
import { GatewayError } from '../../errors.js';

type Json = Record<string, unknown>;

/**
 * Offered names are `exec__<tool name>`. A bridged request may not declare a tool of its own under this
 * prefix (400), so the two sets cannot collide and a call is ours exactly when its name has the prefix.
 * Tool names (`[a-zA-Z0-9_.-]`) are kept as they are: the self-hosted engines behind endpoints do not
 * restrict function names to OpenAI's alphabet.
 */
export const EXEC_TOOL_PREFIX = 'exec__';
/** Upstream turns of one bridged request; the last is offered no execution tool, so it must answer. */
export const MAX_BRIDGE_TURNS = 8;

export interface ToolRunOutcome {
  readonly invocationId: string | null;
  readonly status: string;
  readonly exitCode: number | null;
  readonly output: string;
  readonly outputTruncated: boolean;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface ToolRunRequest {
  readonly projectId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  /** Registers a callback for the client's abort: the invocation is cancelled. */
  readonly onAbort: (listener: () => void) => void;
}

/** The execution surface as the bridge sees it (implemented over the invocations service). */
export interface ExecToolRunner {
  /** Tools of the online agents serving the workspace that run without an approval, by tool name. */
  offer(projectId: string, workspaceId: string): ReadonlyMap<string, ExecTool>;
  /**
   * Runs one call as POST /v1/exec/invocations would and waits for its end. A call the surface refuses
   * (its arguments fail the schema, it needs an approval) resolves with `status: refused`; no agent online
   * for the tool throws 503 tool_executor_unavailable.
   */
  run(request: ToolRunRequest): Promise<ToolRunOutcome>;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export const offeredName = (toolName: string): string => EXEC_TOOL_PREFIX + toolName;
export const isExecCall = (name: string): boolean => name.startsWith(EXEC_TOOL_PREFIX);

/** The `function` tools the model is offered, in tool-name order (stable upstream bodies). */
export function functionTools(offer: ReadonlyMap<string, ExecTool>): Json[] {
  return [...offer.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => ({ type: 'function', function: { name: offeredName(t.name), description: t.description, parameters: t.input_schema } }));
}

/** A bridged request's own tools may not use the reserved prefix (400, naming the tool). */
export function checkClientTools(tools: readonly { readonly function: { readonly name: string } }[] | undefined): void {
  tools?.forEach((t, i) => {
    if (isExecCall(t.function.name)) {
      throw new GatewayError('invalid_request', {
        param: `tools[${i}].function.name`,
        message: `Tool names starting with ${EXEC_TOOL_PREFIX} are reserved for the execution tools x_exec offers; rename this tool.`,
      });
    }
  });
}

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

export function toolCallsOf(message: Json): ToolCall[] {
  if (!Array.isArray(message.tool_calls)) return [];
  return message.tool_calls.map((c) => {
    const call = obj(c);
    const fn = obj(call.function);
    return { id: String(call.id ?? ''), name: String(fn.name ?? ''), arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}) };
  });
}

/** The arguments the model wrote, or null when they are not a JSON object. */
export function argumentsOf(call: ToolCall): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(call.arguments === '' ? '{}' : call.arguments);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** What the model reads back: the invocation's outcome as JSON text in the `tool` message. */
export function toolMessage(call: ToolCall, outcome: ToolRunOutcome): Json {
  const content = {
    invocation_id: outcome.invocationId,
    status: outcome.status,
    exit_code: outcome.exitCode,
    output: outcome.output,
    output_truncated: outcome.outputTruncated,
    error: outcome.error,
  };
  return { role: 'tool', tool_call_id: call.id, content: JSON.stringify(content) };
}

export function refused(code: string, message: string): ToolRunOutcome {
  return { invocationId: null, status: 'refused', exitCode: null, output: '', outputTruncated: false, error: { code, message } };
}

/** The assistant message as the next turn's history: only the fields a model server reads back. */
export function historyMessage(message: Json): Json {
  const out: Json = { role: 'assistant', content: typeof message.content === 'string' ? message.content : null };
  if (Array.isArray(message.tool_calls)) out.tool_calls = message.tool_calls;
  return out;
}

/**
 * The message returned to the client: execution calls removed (ours, already answered, or not run);
 * `finish_reason` then follows what is left.
 */
export function clientFacing(choice: Json, finishReason: string | null): Json {
  const message = obj(choice.message);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter((c) => !isExecCall(String(obj(obj(c).function).name ?? ''))) : null;
  const toolCalls = calls && calls.length > 0 ? calls : null;
  let finish = finishReason ?? (choice.finish_reason as string | null);
  if (finish === 'tool_calls' && toolCalls === null) finish = 'stop';
  return { ...choice, message: { ...message, tool_calls: toolCalls }, finish_reason: finish };
}

/** SPEC Passthrough 3: the output cap left for the next turn (null: no cap was asked for). */
export function remainingCap(cap: number | null, spent: number): number | null {
  return cap === null ? null : cap - spent;
}

const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const nOrNull = (a: unknown, b: unknown): number | null => (a === null && b === null ? null : n(a) + n(b));

/** Field-wise sum of normalized usage objects (every SPEC field present on each: core/chat/usage.ts). */
export function addUsage(a: Json, b: Json): Json {
  const pa = obj(a.prompt_tokens_details);
  const pb = obj(b.prompt_tokens_details);
  const ca = obj(a.completion_tokens_details);
  const cb = obj(b.completion_tokens_details);
  return {
    prompt_tokens: n(a.prompt_tokens) + n(b.prompt_tokens),
    completion_tokens: n(a.completion_tokens) + n(b.completion_tokens),
    total_tokens: n(a.total_tokens) + n(b.total_tokens),
    prompt_tokens_details: { cached_tokens: n(pa.cached_tokens) + n(pb.cached_tokens), audio_tokens: nOrNull(pa.audio_tokens, pb.audio_tokens) },
    completion_tokens_details: {
      reasoning_tokens: nOrNull(ca.reasoning_tokens, cb.reasoning_tokens),
      audio_tokens: nOrNull(ca.audio_tokens, cb.audio_tokens),
      accepted_prediction_tokens: nOrNull(ca.accepted_prediction_tokens, cb.accepted_prediction_tokens),
      rejected_prediction_tokens: nOrNull(ca.rejected_prediction_tokens, cb.rejected_prediction_tokens),
    },
  };
}

/**
 * A finished completion as SSE chunks (the bridge streams the final answer once it is whole): per choice a
 * delta with the message's fields, then its finish; the usage chunk when asked for (SPEC stream_options).
 */
export function completionChunks(body: Json, includeUsage: boolean): Json[] {
  const head = { id: body.id, object: 'chat.completion.chunk', created: body.created, model: body.model, service_tier: body.service_tier };
  const chunks: Json[] = [];
  const choices = Array.isArray(body.choices) ? body.choices.map(obj) : [];
  for (const choice of choices) {
    const message = obj(choice.message);
    const delta: Json = { role: 'assistant', content: message.content ?? null };
    if (typeof message.reasoning === 'string') {
      delta.reasoning = message.reasoning;
      delta.reasoning_content = message.reasoning_content;
    }
    if (typeof message.refusal === 'string') delta.refusal = message.refusal;
    if (Array.isArray(message.tool_calls)) delta.tool_calls = message.tool_calls.map((c, index) => ({ index, ...obj(c) }));
    chunks.push({ ...head, choices: [{ index: choice.index, delta, logprobs: choice.logprobs ?? null, finish_reason: null }] });
    chunks.push({ ...head, choices: [{ index: choice.index, delta: {}, logprobs: null, finish_reason: choice.finish_reason ?? null }] });
  }
  if (includeUsage) chunks.push({ ...head, choices: [], usage: body.usage });
  return chunks;
}
