/**
 * The multimodel turn (SPEC "Semantic router behaviour" 10), the decomposing variant of the routed chat
 * turn: a planner call splits the turn into sub-tasks (multimodel-planner.ts); each is routed and
 * dispatched (multimodel-dispatch.ts, multimodel-run.ts); the answer is buffered or streamed here. Served
 * like the single-model route instead (routeChatTurn + serveChatTurn, one code path with it): multi-model
 * routing disabled, a turn declaring the caller's own function tools with tool_choice other than `none`, a
 * turn asking for audio output, or no valid plan after one retry. The route (routes/multimodel.ts) resolves
 * the workspace and reads the body.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { checkRetention } from '../../core/chat/capabilities.js';
import { applyPartEdits } from '../../core/chat/part-edits.js';
import { excludesReasoning } from '../../core/chat/reasoning.js';
import { resolveServiceTier } from '../../core/chat/service-tier.js';
import { dispatchCount } from '../../core/multimodel/cost.js';
import { checkAttachments, checkModalities } from '../../core/multimodel/modality.js';
import type { Plan } from '../../core/multimodel/plan.js';
import { transcript } from '../../core/multimodel/planner-prompt.js';
import { attachedModalities, type ClientMessage } from '../../core/multimodel/step-messages.js';
import type { EndpointRecord } from '../../core/records.js';
import { requestedSlo } from '../../core/routing/latency-window.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import { timeoutEvent } from '../sse-frames.js';
import { serveChatTurn } from '../chat/chat-turn.js';
import { routeChatTurn } from '../chat/route-chat-turn.js';
import type { RouterChatServices, RouterWorkspace } from '../chat/router-chat-services.js';
import type { RoutedExchange } from '../turn-io.js';
import type { MultimodelTurn } from './multimodel-dispatch.js';
import { makePlan, plannerEndpoint } from './multimodel-planner.js';
import { researchOptIn, withoutResearchField } from './research-opt-in.js';
import { runChoice, usageOf, type ChoiceAnswer, type PlanRun, type Progress } from './multimodel-run.js';

type Json = Record<string, unknown>;

/** Fields each dispatch sets itself; everything else the client sent reaches every dispatch. */
const OWN_FIELDS = new Set(['messages', 'model', 'n', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'x_exec', 'logprobs', 'top_logprobs']);

/**
 * What the client asked of the answer it reads, for the dispatch that gives it (multimodel-run.ts). SPEC
 * "Log probabilities": with logprobs true every choice carries its logprobs, covering the delivered content
 * tokens: the answering dispatch's content is delivered untouched, so its logprobs are exactly those.
 */
const ANSWER_FIELDS = ['response_format', 'logprobs', 'top_logprobs'] as const;

function answerFieldsOf(parsed: Json): Json {
  const fields: Json = {};
  for (const k of ANSWER_FIELDS) if (parsed[k] !== undefined && parsed[k] !== null) fields[k] = parsed[k];
  return fields;
}

/** The body as the route read it. */
export interface MultimodelBody {
  readonly raw: Buffer;
  readonly parsed: Json;
  /** The body validated as the shared schema reads it, without `n` (checked apart, uncapped). */
  readonly chat: ChatRequest;
  readonly n: number;
}

/** The caller's own function tools with any tool_choice except `none` (server-owned x_exec tools do not count). */
function declaresCallerTools(chat: ChatRequest): boolean {
  return (chat.tools?.length ?? 0) > 0 && chat.tool_choice !== 'none';
}

/**
 * Audio output (SPEC `modalities` with audio) is spoken by the project's speech endpoint from one model's
 * finished answer, which only the single-model turn produces (chat-audio.ts); decomposed, the answer came
 * back as text only, a substitute for what was asked. Served like the single-model route, the turn gets
 * that route's audio, or its 400 on `modalities` when the project has no speech endpoint.
 */
const asksForAudioOutput = (chat: ChatRequest): boolean => chat.modalities?.includes('audio') === true;

/**
 * Served like POST .../_semantic/router/v1/chat/completions: route once, one turn, the same code, the
 * client's bytes. Only `n` keeps this route's rule (not capped, streamable): it reaches the model as sent.
 */
async function singleModel(services: RouterChatServices, ctx: RoutedExchange, auth: AuthenticatedKey, workspace: RouterWorkspace, body: MultimodelBody): Promise<void> {
  const chat = body.parsed.n === undefined || body.parsed.n === null ? body.chat : { ...body.chat, n: body.n };
  const endpoint = await routeChatTurn(services, ctx, auth, workspace, chat);
  await serveChatTurn(services, { ctx, auth, endpoint, workspaceId: workspace.workspaceId, raw: body.raw, parsed: body.parsed, chat, route: 'router' });
}

/**
 * The turn, once the route has resolved the workspace and read the body: planned and dispatched, or served
 * like the single-model route (see the file's header for when).
 */
export async function serveMultimodelTurn(services: RouterChatServices, ctx: RoutedExchange, auth: AuthenticatedKey, workspace: RouterWorkspace, sent: MultimodelBody): Promise<void> {
  // Checked before any branch: the field, its scope and SPEC's n rule hold whether or not the turn is decomposed.
  const researchAsked = researchOptIn(sent.parsed, auth, sent.n);
  const body = withoutResearchField(sent);
  const settings = services.router.settingsOf(auth.project.id);
  if (!settings.multiModelEnabled || declaresCallerTools(body.chat) || asksForAudioOutput(body.chat)) return singleModel(services, ctx, auth, workspace, body);
  // "Same bodies" as the single-model route (SPEC behaviour 10): its retention refusal holds here too, and
  // before the planner runs, since no dispatch of a refused turn may happen.
  const zeroDataRetention = workspace.workspaceId !== null && services.catalog.workspaces(auth.project.id).get(workspace.workspaceId)?.zeroDataRetention === true;
  checkRetention(body.chat, zeroDataRetention);

  const routable = services.router.routableEndpoints(auth.project.id, workspace.workspaceId, auth.key.endpointId);
  const attached = attachedModalities(body.chat.messages as readonly ClientMessage[]);
  checkAttachments(attached, routable, services.features.video_input);
  const planner = plannerEndpoint(services, auth, workspace.workspaceId);
  const client = await resolvedMessages(services, ctx, body);
  const plan = await makePlan({ services, req: ctx.req, endpoint: planner, conversation: transcript(client), attached });
  // A client gone during planning gets no dispatch at all (nothing is billed for a turn nobody reads).
  if (ctx.req.aborted) return;
  if (plan === null) return singleModel(services, ctx, auth, workspace, body);
  if ((plan.research || researchAsked) && body.n > 1) {
    throw new GatewayError('unsupported_value', { param: 'n', message: 'n above 1 is not supported for a turn that asks for research on the multimodel route; send n: 1.' });
  }
  checkModalities(plan.subtasks, routable, services.features.video_input);

  const carried: Json = {};
  for (const [k, v] of Object.entries(body.parsed)) if (!OWN_FIELDS.has(k)) carried[k] = v;
  const turn: MultimodelTurn = {
    services,
    ctx,
    auth,
    workspace,
    clientModel: body.chat.model,
    carried,
    slo: requestedSlo(ctx.req.header('x-slo-ttft-ms'), ctx.req.header('x-slo-tpot-ms')),
    tier: resolveServiceTier(body.chat.service_tier),
  };
  const run: PlanRun = { client, answerFields: answerFieldsOf(body.parsed), plan, usages: [] };
  ctx.req.log.endpoint = planner.slug;
  if (body.chat.stream === true) return streamed(turn, run, body);
  return buffered(turn, run, body);
}

/**
 * The client's messages with image URLs fetched server-side, as the single-model route fetches them (SPEC
 * X-Service-Augment-Media-URL-Resolution: on everywhere unless the header opts out): the vision sub-tasks
 * send the fetched images. Fetched once per turn, not per dispatch.
 */
async function resolvedMessages(services: RouterChatServices, ctx: RoutedExchange, body: MultimodelBody): Promise<readonly ClientMessage[]> {
  const messages = body.chat.messages as readonly ClientMessage[];
  if (!services.media || !messages.some((m) => Array.isArray(m.content))) return messages;
  const edits = await services.media.images(body.parsed, body.chat, ctx.req);
  if (edits.length === 0) return messages;
  return applyPartEdits(body.raw, body.parsed, edits).parsed.messages as ClientMessage[];
}

/**
 * X-Service-Routed-Model / -Endpoint name the first endpoint a dispatch of the turn was routed to: the
 * head of a stream goes out before the last dispatch is routed (docs/decisions.md "Multimodel route").
 */
function routedHeaders(turn: MultimodelTurn): (endpoint: EndpointRecord) => void {
  let set = false;
  return (endpoint) => {
    if (set) return;
    set = true;
    turn.ctx.reply.setHeader('X-Service-Routed-Model', endpoint.model.id);
    turn.ctx.reply.setHeader('X-Service-Routed-Endpoint', endpoint.slug);
  };
}

const choicesOf = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

async function buffered(turn: MultimodelTurn, run: PlanRun, body: MultimodelBody): Promise<void> {
  const hooks = { onRouted: routedHeaders(turn), onProgress: () => undefined };
  const answers = await Promise.all(choicesOf(body.n).map((c) => runChoice(turn, run, c, hooks)));
  const exclude = excludesReasoning(body.chat);
  turn.ctx.reply.json(200, {
    id: turn.ctx.req.requestId,
    object: 'chat.completion',
    created: Math.floor(turn.services.now() / 1000),
    model: turn.clientModel,
    choices: answers.map((a) => choiceBody(a, exclude)),
    usage: usageOf(run),
    service_tier: turn.tier.lane,
    system_fingerprint: null,
    ...adjusted(answers.find((a) => a.adjustedEffort !== null)),
    x_multimodel: summary(run.plan, body.n),
  });
}

/**
 * SPEC `reasoning_effort`: "a mapped value is reported in x_adjusted_reasoning_effort", here the mapping
 * of the dispatch whose answer the client reads (as for its reasoning).
 */
const adjusted = (a: ChoiceAnswer | undefined): Json => (a?.adjustedEffort ? { x_adjusted_reasoning_effort: a.adjustedEffort } : {});

function choiceBody(a: ChoiceAnswer, excludeReasoning: boolean): Json {
  const message: Json = { role: 'assistant', content: a.content, refusal: null, tool_calls: null, annotations: [] };
  // SPEC "Reasoning channel": both fields, identical text; left out only under reasoning.exclude / include_reasoning: false.
  const reasoning = shownReasoning(a, excludeReasoning);
  if (reasoning !== null) {
    message.reasoning = reasoning;
    message.reasoning_content = reasoning;
  }
  return { index: a.index, message, logprobs: a.logprobs, finish_reason: a.finishReason };
}

const shownReasoning = (a: ChoiceAnswer, excludeReasoning: boolean): string | null => (excludeReasoning ? null : a.reasoning);

/** What the turn cost, in SPEC's terms (core/multimodel/cost.ts); sub-task ids and modalities, no text. */
function summary(plan: Plan, n: number): Json {
  return { subtasks: plan.subtasks.length, dispatches: dispatchCount(n, plan.subtasks.length) };
}

/**
 * SSE: per choice a role chunk, then one progress chunk per finished dispatch (an empty delta with
 * `x_multimodel_progress`), then the answering dispatch's reasoning as one reasoning delta (unless excluded),
 * the answer as one content delta and the finish chunk; the usage chunk with
 * stream_options.include_usage; `[DONE]`. A failure is one `data:` frame with the error envelope, then
 * `[DONE]` (a timeout: the SSE `error` event, without `[DONE]`); with n above 1 it is written once, after
 * the last choice closed (SPEC behaviour 10).
 */
async function streamed(turn: MultimodelTurn, run: PlanRun, body: MultimodelBody): Promise<void> {
  const { reply, req } = turn.ctx;
  const created = Math.floor(turn.services.now() / 1000);
  // SPEC "Chat completion response": service_tier on every chunk; streaming chunks omit system_fingerprint.
  const base = { id: req.requestId, object: 'chat.completion.chunk', created, model: turn.clientModel, service_tier: turn.tier.lane };
  const exclude = excludesReasoning(body.chat);
  let begun = false;
  const write = (frame: string): void => {
    if (!begun) {
      begun = true;
      reply.setHeader('Cache-Control', 'no-cache');
      reply.beginStream(200, 'text/event-stream');
    }
    if (reply.open) reply.write(frame);
  };
  const send = (chunk: Json | string): void => write(`data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`);
  const delta = (index: number, d: Json, finish: string | null, extra: Json = {}, logprobs: unknown = null): Json => ({ ...base, choices: [{ index, delta: d, logprobs, finish_reason: finish }], ...extra });
  const opened = new Set<number>();
  const open = (index: number): void => {
    if (opened.has(index)) return;
    opened.add(index);
    send(delta(index, { role: 'assistant', content: '' }, null));
  };
  const hooks = {
    onRouted: routedHeaders(turn),
    onProgress: (p: Progress) => {
      open(p.choice);
      send(delta(p.choice, {}, null, { x_multimodel_progress: { step: p.step ?? 'synthesis', endpoint: p.endpoint } }));
    },
  };
  const outcomes = await Promise.allSettled(
    choicesOf(body.n).map(async (c) => {
      const answer = await runChoice(turn, run, c, hooks);
      open(c);
      const reasoning = shownReasoning(answer, exclude);
      const mapped = adjusted(answer);
      if (reasoning !== null) send(delta(c, { reasoning, reasoning_content: reasoning }, null, mapped));
      send(delta(c, { content: answer.content }, null, mapped, answer.logprobs));
      send(delta(c, {}, answer.finishReason, mapped));
    }),
  );
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) {
    if (req.aborted) return;
    const e = toGatewayError(failed.reason);
    // SPEC "Streaming events" / "Timeouts by service tier": a streamed timeout is the SSE `error` event
    // (type timeout_error), as on the single-model route, not the 408's envelope in a data frame; and,
    // the turn not having completed, no [DONE] (docs/decisions.md "Streaming failures").
    if (e.code === 'timeout') {
      write(timeoutEvent(e.message));
      reply.endStream();
      return;
    }
    send(e.toEnvelope());
  } else if (body.chat.stream_options?.include_usage === true) {
    send({ ...base, choices: [], usage: usageOf(run), x_multimodel: summary(run.plan, body.n) });
  }
  send('[DONE]');
  reply.endStream();
}
