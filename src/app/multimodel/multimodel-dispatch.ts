/**
 * One dispatch of the multimodel route (SPEC behaviour 10): a sub-task or a synthesis, routed by the
 * semantic router as a sub-task (no region bonus, no conversation affinity), budget-checked, recorded as a
 * decision row, sent to the endpoint as one buffered upstream turn and billed with one usage row. Every
 * dispatch is a model turn of its own: n x S of them, plus the syntheses (core/multimodel/cost.ts).
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { resolveReasoning, type ReasoningOptions } from '../../core/chat/reasoning.js';
import type { ServiceTier } from '../../core/chat/service-tier.js';
import { separateReasoning } from '../../core/chat/normalize-completion.js';
import { countOf, normalizeUsage } from '../../core/chat/usage.js';
import type { Usage } from '../../core/multimodel/cost.js';
import type { StepMessage } from '../../core/multimodel/step-messages.js';
import type { EndpointRecord } from '../../core/records.js';
import type { LatencyObjective } from '../../core/routing/latency-window.js';
import { queryPreview } from '../../core/routing/query.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import { clientModeOf, decisionRecord } from '../../router/decision-row.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import { requireBudget } from '../endpoint-access.js';
import type { RouterChatServices, RouterWorkspace } from '../chat/router-chat-services.js';
import type { Outcome } from '../chat/chat-dispatch.js';
import type { RoutedExchange } from '../turn-io.js';
import { usageRow, type RowUsage } from '../usage-row.js';

/** Everything every dispatch of one multimodel turn shares. */
export interface MultimodelTurn {
  readonly services: RouterChatServices;
  readonly ctx: RoutedExchange;
  readonly auth: AuthenticatedKey;
  readonly workspace: RouterWorkspace;
  /** The client's `model` string (echoed in the answer; what exact_request_model rules read). */
  readonly clientModel: string;
  /**
   * The client's body minus what each dispatch sets itself (messages, model, n, stream, tools): sampling
   * parameters and unknown fields reach every dispatch as they reach a single-model turn.
   */
  readonly carried: Readonly<Record<string, unknown>>;
  readonly slo: LatencyObjective | null;
  /** The client's service_tier resolved to a lane: every dispatch is billed in it, and the answer reports it. */
  readonly tier: ServiceTier;
}

export interface DispatchLabel {
  /** `step` or `synthesis`; recorded on the decision row. */
  readonly role: 'step' | 'synthesis';
  readonly stepId: string | null;
  readonly choice: number;
}

export interface Dispatched {
  readonly content: string;
  /** The model's separate reasoning (reasoning_content or reasoning), or null when it produced none. */
  readonly reasoning: string | null;
  /** The choice's `logprobs` as sent (the client's read of the answering dispatch's tokens); null when absent. */
  readonly logprobs: unknown;
  readonly usage: Usage;
  readonly endpoint: EndpointRecord;
  readonly finishReason: string;
  /** The effort sent when SPEC's mapping changed the client's (reported as x_adjusted_reasoning_effort); else null. */
  readonly adjustedEffort: string | null;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * `fields` are the dispatch's own: its messages, and on the dispatch whose answer the client receives the
 * client's response_format, logprobs and top_logprobs. `onRouted` runs once the endpoint is chosen, before the upstream call.
 */
export async function dispatchStep(turn: MultimodelTurn, fields: { readonly messages: readonly StepMessage[] } & Json, label: DispatchLabel, onRouted?: (endpoint: EndpointRecord) => void): Promise<Dispatched> {
  const { services, ctx, auth, workspace } = turn;
  const { req } = ctx;
  const messages = fields.messages;
  const chat = { ...turn.carried, ...fields, model: turn.clientModel } as Json & { model: string; messages: readonly StepMessage[] };
  const routeStarted = performance.now();
  // Routed on the dispatch's own request (its last message: the instruction and its attachments): the
  // predecessors' answers are context, not topic, and would pull every later step towards the first one.
  const routed = { ...chat, messages: messages.slice(-1) };
  const { endpoint, decision } = await services.router.route({
    projectId: auth.project.id,
    workspaceId: workspace.workspaceId,
    keyEndpointId: auth.key.endpointId,
    chat: routed,
    conversationId: undefined,
    onAbort: (listener) => req.onAbort(listener),
    requestId: req.requestId,
    slo: turn.slo,
    subTask: true,
  });
  const routeTimeMs = performance.now() - routeStarted;
  requireBudget(ctx, services, auth, { endpoint, workspaceId: workspace.workspaceId });
  const row = decisionRecord(
    {
      requestId: req.requestId,
      projectId: auth.project.id,
      workspaceId: workspace.workspaceId,
      createdAt: services.now(),
      preview: queryPreview(messages),
      routerId: services.routerId,
      clientMode: clientModeOf(req.surface, workspace.namedBy),
      userAgent: req.header('user-agent') ?? null,
      clientIp: req.clientIp,
      routeTimeMs,
    },
    // SPEC "Routing decision row": similarity_score is absent on multi-model turns.
    { ...decision, scored: false },
    endpoint,
  );
  services.decisionLog.record({ ...row, detail: { ...row.detail, multimodel: { role: label.role, step_id: label.stepId, choice: label.choice } } });
  onRouted?.(endpoint);
  // SPEC `reasoning_effort`: mapped onto the routed model's levels, as a single-model turn maps it; the
  // router only chose a model that accepts the options, so this does not refuse.
  const { effort, adjustedFrom } = resolveReasoning(chat as ReasoningOptions, endpoint.model);
  const adjustedEffort = adjustedFrom !== null ? effort : null;
  const body = adjustedEffort !== null ? withEffort(chat, adjustedEffort) : chat;
  return { ...(await exchange(turn, endpoint, { ...body, model: endpoint.upstream.model })), adjustedEffort };
}

/** The mapped effort where the client put one (core/chat/upstream-body.ts edits the same two fields). */
function withEffort(chat: Json, effort: string): Json {
  const out: Json = { ...chat };
  if (typeof chat.reasoning_effort === 'string') out.reasoning_effort = effort;
  const reasoning = obj(chat.reasoning);
  if (typeof reasoning.effort === 'string') out.reasoning = { ...reasoning, effort };
  return out;
}

async function exchange(turn: MultimodelTurn, endpoint: EndpointRecord, body: Json): Promise<Omit<Dispatched, 'adjustedEffort'>> {
  const { services, ctx, auth } = turn;
  const { req } = ctx;
  const deadlines = deadlinesFor(endpoint.tier, services.timeouts, body.reasoning_effort !== undefined && body.reasoning_effort !== null);
  const deadline = new UpstreamDeadline(deadlines.requestMs, req, 'model', endpoint.tier, null);
  const started = deadline.started;
  let usage: Usage | null = null;
  let outcome: Outcome = 'error';
  let errorCode: string | null = null;
  try {
    const res = await callUpstream(
      services.upstream,
      endpoint,
      {
        path: '/chat/completions',
        body: Buffer.from(JSON.stringify(body)),
        signal: deadline,
        headersTimeoutMs: deadlines.requestMs + 1000,
        bodyTimeoutMs: deadlines.requestMs + 1000,
        requestId: req.requestId,
      },
      false,
    );
    const answer = readAnswer(res.body, endpoint.model.reasoning !== 'none');
    usage = answer.usage;
    outcome = 'completed';
    return { ...answer, endpoint };
  } catch (err) {
    const e = toGatewayError(err);
    outcome = req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error';
    errorCode = e.code;
    throw e;
  } finally {
    deadline.done();
    services.usage.record(
      usageRow({
        requestId: req.requestId,
        account: { projectId: auth.project.id, workspaceId: turn.workspace.workspaceId, keyId: auth.key.id },
        endpointId: endpoint.id,
        route: 'router',
        lane: turn.tier.lane,
        multiplier: turn.tier.multiplier,
        outcome,
        usage: rowUsage(usage),
        started,
        createdAt: services.now(),
        call: deadline,
        ttftMs: null,
        errorCode,
      }),
    );
  }
}

/**
 * A dispatch's row usage: the answer's counts; a failed dispatch's row has none and has always been
 * labelled `upstream` (kept as it was: issue 33 moves the row, it does not change it).
 */
const NOTHING_COUNTED: RowUsage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: null, source: 'upstream' };
function rowUsage(usage: Usage | null): RowUsage {
  if (usage === null) return NOTHING_COUNTED;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    cachedTokens: usage.prompt_tokens_details.cached_tokens,
    reasoningTokens: usage.completion_tokens_details.reasoning_tokens,
    source: 'upstream',
  };
}

function readAnswer(raw: Buffer, reasoningModel: boolean): { content: string; reasoning: string | null; logprobs: unknown; usage: Usage; finishReason: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('internal_error', { message: 'The model server returned a response that is not JSON.' });
  }
  const body = obj(json);
  const choice = obj(Array.isArray(body.choices) ? body.choices[0] : undefined);
  const message = obj(choice.message);
  if (typeof message.content !== 'string') {
    throw new GatewayError('internal_error', { message: 'A sub-task dispatch came back without text content.' });
  }
  // As the single-model route reads it.
  const reasoning = separateReasoning(message);
  return {
    content: message.content,
    reasoning: reasoning === '' ? null : reasoning,
    logprobs: choice.logprobs ?? null,
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop',
    usage: usageOf(body.usage, reasoningModel),
  };
}

/** SPEC's usage object, filled as every other chat route fills it (core/chat/usage.ts), typed for the sum. */
function usageOf(raw: unknown, reasoningModel: boolean): Usage {
  const u = normalizeUsage(raw, reasoningModel);
  const prompt = obj(u.prompt_tokens_details);
  const completion = obj(u.completion_tokens_details);
  return {
    prompt_tokens: num(u.prompt_tokens),
    completion_tokens: num(u.completion_tokens),
    total_tokens: num(u.total_tokens),
    prompt_tokens_details: { cached_tokens: num(prompt.cached_tokens), audio_tokens: countOf(prompt.audio_tokens) },
    completion_tokens_details: {
      reasoning_tokens: countOf(completion.reasoning_tokens),
      audio_tokens: countOf(completion.audio_tokens),
      accepted_prediction_tokens: countOf(completion.accepted_prediction_tokens),
      rejected_prediction_tokens: countOf(completion.rejected_prediction_tokens),
    },
  };
}
