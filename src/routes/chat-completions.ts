/**
 * POST /{project}/{endpoint}/v1/chat/completions: authenticate, validate at the edge (everything SPEC
 * refuses is refused here, before the upstream sees anything), then hand one turn to the dispatcher.
 */
import { checkCapabilities } from '../core/chat/capabilities.js';
import { checkContextWindow } from '../core/chat/context-window.js';
import { deadlinesFor } from '../core/chat/deadlines.js';
import { augmentationFlag } from '../core/chat/header-flags.js';
import { resolveReasoning } from '../core/chat/reasoning.js';
import { resolveServiceTier } from '../core/chat/service-tier.js';
import type { TurnContext } from '../core/chat/turn-context.js';
import { buildUpstreamBody } from '../core/chat/upstream-body.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { RouteDef } from '../http/server.js';
import { parseChatRequest } from '../schemas/chat-request.js';
import { dispatchTurn, type ChatServices } from './chat-dispatch.js';
import { requireEndpoint, requireKey } from './guard.js';

export function assertServesChat(endpoint: EndpointRecord): void {
  if (endpoint.kind !== 'chat') {
    throw new GatewayError('invalid_request', {
      message: `Endpoint ${endpoint.slug} is a ${endpoint.kind} endpoint; chat completions need a chat endpoint.`,
    });
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

async function parseBody(req: IncomingRequest): Promise<{ raw: Buffer; parsed: Record<string, unknown> }> {
  const parsed = await req.json();
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  return { raw: await req.body(), parsed: parsed as Record<string, unknown> };
}

export function chatCompletionsRoutes(services: ChatServices): RouteDef[] {
  return [
    {
      method: 'POST',
      pattern: '/:project/:endpoint/v1/chat/completions',
      family: 'chat',
      idPrefix: 'chatcmpl-',
      handle: async ({ req, reply }) => {
        const auth = requireKey(req, services, 'inference');
        const { endpoint, workspaceId } = requireEndpoint(req, services, auth);
        assertServesChat(endpoint);
        const { raw, parsed } = await parseBody(req);
        const chat = parseChatRequest(parsed);
        const workspace = workspaceId ? services.catalog.workspaces(auth.project.id).get(workspaceId) : undefined;
        checkCapabilities(chat, {
          model: endpoint.model,
          zeroDataRetention: workspace?.zeroDataRetention ?? false,
          projectHasSpeechEndpoint: services.catalog.endpoints(auth.project.id).some((e) => e.kind === 'speech' && e.status === 'active'),
          videoInputEnabled: services.features.video_input,
        });
        const reasoning = resolveReasoning(chat, endpoint.model);
        const tier = resolveServiceTier(chat.service_tier);
        const clamp = augmentationFlag(req.headers, 'x-service-augment-max-output-tokens-clamp');
        const verdict = await checkContextWindow(chat, endpoint.model.context_window, async (texts) => services.pool.countTokens({ texts }, req.signal), clamp);
        const adjustedEffort = reasoning.adjustedFrom !== null ? reasoning.effort : null;
        const body = buildUpstreamBody(raw, parsed, { upstreamModel: endpoint.upstream.model, clamp: verdict.clamp, adjustedEffort });
        const turn: TurnContext = {
          requestId: req.requestId,
          clientModel: chat.model,
          lane: tier.lane,
          reasoningModel: endpoint.model.reasoning !== 'none',
          excludeReasoning: reasoning.exclude,
          splitInlineThink: augmentationFlag(req.headers, 'x-service-augment-reasoning-normalization'),
          adjustedEffort,
        };
        await dispatchTurn(services, {
          req,
          reply,
          endpoint,
          body,
          stream: chat.stream === true,
          turn,
          deadlines: deadlinesFor(endpoint.tier, services.timeouts, chat.reasoning_effort !== undefined && chat.reasoning_effort !== null),
          promptEstimate: verdict.inputTokens,
          account: { projectId: auth.project.id, workspaceId, keyId: auth.key.id, multiplier: tier.multiplier },
          chat,
        });
      },
    },
  ];
}
