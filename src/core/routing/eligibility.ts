/**
 * SPEC behaviour 8: eligibility filters, in order: modality, context window, tool calling, structured
 * output; then reasoning, ours (SPEC's list is silent on it; docs/decisions.md "Reasoning filter"): a
 * turn that asks for reasoning would otherwise be routed to a model that refuses it with 400, although a
 * model of the workspace could serve it. A filter that removes every remaining candidate refuses the
 * request with the error a direct route would give for the same body on any of them. Pure.
 */
import { GatewayError } from '../../errors.js';
import { resolveReasoning, type ReasoningOptions } from '../chat/reasoning.js';
import type { CandidateRow, FilterName, RouteEndpoint, RouteQuery } from './types.js';

/** SPEC "Other limits": the output reserve when the caller sends no max_tokens. */
export const CONTEXT_RESERVE = 2048;
/** SPEC behaviour 8: windows under this are routable whatever the request's size. */
export const SMALL_WINDOW = 4096;

type Test = (e: RouteEndpoint) => boolean;

interface Filter {
  readonly name: FilterName;
  /** null: the filter does not apply to this request. */
  readonly keep: Test | null;
  /** The error when the filter leaves nothing of `remaining` (the candidates it was given). */
  readonly refusal: (remaining: readonly RouteEndpoint[]) => GatewayError;
}

export interface Eligibility {
  readonly eligible: readonly RouteEndpoint[];
  readonly dropped: readonly CandidateRow[];
  readonly counts: Readonly<Record<FilterName, number>>;
}

const has = (e: RouteEndpoint, capability: string): boolean => (e.model.capabilities as readonly string[]).includes(capability);

function filtersFor(q: RouteQuery, videoInputEnabled: boolean): Filter[] {
  const n = q.needs;
  const output = q.maxOutputTokens ?? CONTEXT_RESERVE;
  return [
    {
      name: 'modality',
      keep: n.vision || n.audioInput || n.videoInput
        ? (e) => (!n.vision || has(e, 'vision')) && (!n.audioInput || has(e, 'audio_input')) && (!n.videoInput || (videoInputEnabled && has(e, 'video_input')))
        : null,
      refusal: () =>
        new GatewayError('invalid_request', {
          param: 'messages',
          message: `No endpoint of this workspace accepts the request's input (${modalities(n).join(', ')}); send text, or add an endpoint whose model supports it.`,
        }),
    },
    {
      name: 'context_window',
      keep: (e) => e.model.context_window < SMALL_WINDOW || q.inputTokens + output <= e.model.context_window,
      refusal: () =>
        new GatewayError('context_length_exceeded', {
          param: q.maxOutputTokens !== null ? 'max_tokens' : 'messages',
          message:
            `No endpoint of this workspace has a context window for about ${q.inputTokens} input tokens plus ` +
            (q.maxOutputTokens !== null ? `${q.maxOutputTokens} requested output tokens` : `the ${CONTEXT_RESERVE}-token output reserve`) +
            '. Shorten the input or lower max_tokens.',
        }),
    },
    {
      name: 'tool_calling',
      keep: n.tools ? (e) => has(e, 'tools') : null,
      refusal: () =>
        n.execTools === true && !n.toolsDeclared
          ? new GatewayError('model_capability_missing', {
              param: 'x_exec',
              message: 'x_exec offers the workspace\'s execution tools, but no endpoint of this workspace supports tool calling: add one whose model has the tools capability, or send the turn without x_exec.',
            })
          : new GatewayError('unsupported_parameter', {
          param: n.toolsDeclared ? 'tools' : 'messages',
          message: `${n.toolsDeclared ? 'tools are' : 'Tool-call history is'} not supported: no endpoint of this workspace supports tool calling.`,
        }),
    },
    {
      name: 'structured_output',
      keep: n.structuredOutput ? (e) => has(e, 'structured_output') : null,
      refusal: () =>
        new GatewayError('unsupported_parameter', {
          param: 'response_format',
          message: 'response_format json modes are not supported: no endpoint of this workspace supports structured output.',
        }),
    },
    {
      name: 'reasoning',
      keep: n.reasoning ? reasoningTest(n.reasoning) : null,
      refusal: (remaining) => reasoningRefusal(n.reasoning ?? {}, remaining),
    },
  ];
}

/**
 * An endpoint is kept when its model accepts the request's reasoning options exactly as a direct turn
 * would (core/chat/reasoning.ts decides both, so they cannot drift): a model that reasons, a thinking
 * budget only where the model can enforce one, `none` only where thinking can be turned off.
 */
function reasoningTest(options: ReasoningOptions): Test {
  return (e) => reasoningError(options, e) === null;
}

function reasoningError(options: ReasoningOptions, e: RouteEndpoint): GatewayError | null {
  try {
    resolveReasoning(options, e.model);
    return null;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

/**
 * What a direct turn on one of the candidates would answer, code and param unchanged. A model that
 * reasons is asked first: its refusal names the values it does accept (unsupported_value lists its
 * levels), which helps more than "this model does not reason". An invalid_request is about the request's
 * own options (they contradict each other) and reads the same from every model: it goes out as it is.
 */
function reasoningRefusal(options: ReasoningOptions, remaining: readonly RouteEndpoint[]): GatewayError {
  const asked = [...remaining.filter((e) => e.model.reasoning !== 'none'), ...remaining.filter((e) => e.model.reasoning === 'none')];
  for (const e of asked) {
    const err = reasoningError(options, e);
    if (err === null) continue;
    if (err.code === 'invalid_request') return err;
    return new GatewayError(err.code, {
      param: err.param,
      message: `No endpoint of this workspace accepts the request's reasoning options. Endpoint ${e.slug}: ${err.message}`,
    });
  }
  // Unreachable: the filter removed every candidate, so each has a refusal.
  return new GatewayError('unsupported_parameter', { message: "No endpoint of this workspace accepts the request's reasoning options." });
}

function modalities(n: RouteQuery['needs']): string[] {
  return [n.vision ? 'images' : '', n.audioInput ? 'audio' : '', n.videoInput ? 'video' : ''].filter((s) => s !== '');
}

/** Runs the filters in SPEC order; throws the refusal of the first filter that leaves nothing. */
export function applyEligibility(pool: readonly RouteEndpoint[], q: RouteQuery, videoInputEnabled: boolean): Eligibility {
  let remaining = pool;
  const dropped: CandidateRow[] = [];
  const counts: Record<FilterName, number> = { modality: 0, context_window: 0, tool_calling: 0, structured_output: 0, reasoning: 0 };
  for (const filter of filtersFor(q, videoInputEnabled)) {
    const keep = filter.keep;
    if (!keep) continue;
    const kept = remaining.filter((e) => keep(e));
    if (kept.length === 0) throw filter.refusal(remaining);
    for (const e of remaining) {
      if (!kept.includes(e)) dropped.push({ endpoint_id: e.id, slug: e.slug, similarity: null, dropped_by: filter.name });
    }
    counts[filter.name] = remaining.length - kept.length;
    remaining = kept;
  }
  return { eligible: remaining, dropped, counts };
}

/** Whether one endpoint passes every filter (rule targets: "routable" for this request). */
export function isEligible(e: RouteEndpoint, q: RouteQuery, videoInputEnabled: boolean): boolean {
  return filtersFor(q, videoInputEnabled).every((f) => f.keep === null || f.keep(e));
}

/**
 * Upstream health (ours; SPEC's filters are silent on it): an endpoint none of whose upstream servers
 * takes requests now (src/upstream/server-health.ts) is left out before the decision, like an inactive
 * one, so rules, pins and classification choose among endpoints that can answer. When that would leave no
 * active endpoint, every one is kept: the turn then fails with the upstream's own cause rather than a
 * misleading 404 no_routable_endpoints. Allocates nothing while every upstream is healthy.
 */
export function withHealthyUpstreams<E extends Pick<RouteEndpoint, 'id' | 'status'>>(endpoints: readonly E[], healthy: (endpointId: string) => boolean): readonly E[] {
  if (endpoints.every((e) => healthy(e.id))) return endpoints;
  const kept = endpoints.filter((e) => healthy(e.id));
  return kept.some((e) => e.status === 'active') ? kept : endpoints;
}
