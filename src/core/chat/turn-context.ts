/** What normalization needs to know about the turn, fixed before the upstream is called. */
export interface TurnContext {
  /** Our request id: the body `id` and the X-Request-ID header. */
  readonly requestId: string;
  /** The `model` string the client sent, echoed back. */
  readonly clientModel: string;
  readonly lane: 'flex' | 'default' | 'priority';
  /** The endpoint's model produces separate reasoning (its `reasoning` is not `none`). */
  readonly reasoningModel: boolean;
  /** reasoning.exclude / include_reasoning: false — run and bill the reasoning, omit it from the response. */
  readonly excludeReasoning: boolean;
  /** X-Service-Augment-Reasoning-Normalization: move inline <think> text out of content. */
  readonly splitInlineThink: boolean;
  /** Set when SPEC's mapping changed the requested effort (reported as x_adjusted_reasoning_effort). */
  readonly adjustedEffort: string | null;
  /**
   * The client sent stream_options.include_usage: true. Otherwise a usage field the model server streams
   * anyway (vLLM's forced or continuous usage stats) is kept for billing and left out of the chunks
   * (SPEC `stream_options`: "otherwise it has no usage field").
   */
  readonly streamUsage: boolean;
}

export interface TurnUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number | null;
  /** `upstream` when the model server reported usage; `estimated` when it did not (docs/decisions.md "Usage the model server did not report"). */
  readonly source: 'upstream' | 'estimated';
}
