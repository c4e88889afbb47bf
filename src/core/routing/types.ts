/**
 * The semantic router's vocabulary (SPEC "Routing rule", "Semantic router settings", "Routing decision
 * row", "Semantic router behaviour"). Everything here is plain data: the decision is a pure function of
 * it (decide.ts), so every rule of SPEC's order is unit-testable without HTTP, SQLite or a model.
 */
import type { ReasoningOptions } from '../chat/reasoning.js';
import type { EndpointRecord } from '../records.js';

export type RoutingMode = 'semantic' | 'concrete';

/** A routing rule in its stored (and response) shape: SPEC "Routing rule", nested. */
export interface RoutingRule {
  readonly id: string;
  readonly name: string;
  readonly match: {
    readonly query_contains: readonly string[];
    readonly min_input_tokens: number | null;
    readonly exact_request_model: string | null;
  };
  readonly action: { readonly endpoint_id: string; readonly fallback_to_classification: boolean };
  readonly priority: number;
  readonly enabled: boolean;
}

/** Effective project settings: stored values over deployment defaults. */
export interface RouterSettings {
  /** Only an explicit false disables (SPEC "Semantic router settings"). */
  readonly enabled: boolean;
  readonly multiModelEnabled: boolean;
  readonly similarityFloor: number;
  readonly switchMargin: number;
  readonly proximityBonus: number;
  readonly fallbackEndpointId: string | null;
  /** The multimodel route's planner endpoint; null or absent: the default (app/multimodel/multimodel-planner.ts). */
  readonly plannerEndpointId?: string | null;
  readonly excludedEndpointIds: readonly string[];
  readonly rules: readonly RoutingRule[];
}

/** What the router needs to know about an endpoint; a subset of the catalog record. */
export type RouteEndpoint = Pick<EndpointRecord, 'id' | 'slug' | 'name' | 'kind' | 'status' | 'region' | 'model'>;

/** What the request needs from an endpoint, read from the body before any I/O. */
export interface RequestNeeds {
  readonly vision: boolean;
  readonly audioInput: boolean;
  readonly videoInput: boolean;
  /** Tools declared, or tool calls / tool results in the history. */
  readonly tools: boolean;
  readonly toolsDeclared: boolean;
  /** `x_exec: true`: the workspace's execution tools are offered, so the model must call tools. */
  readonly execTools?: boolean;
  /** response_format json_object or json_schema. */
  readonly structuredOutput: boolean;
  /**
   * The request's reasoning options when it asks for reasoning (reasoning_effort, reasoning.effort,
   * reasoning.enabled or reasoning.max_tokens); absent or null when it does not.
   */
  readonly reasoning?: ReasoningOptions | null;
}

export interface RouteQuery {
  /** The composed query text (query.ts): what rules match and what is embedded. */
  readonly text: string;
  /** Over-estimated input tokens (SPEC behaviour 8). */
  readonly inputTokens: number;
  /** The caller's max_completion_tokens, else max_tokens; null when neither was sent. */
  readonly maxOutputTokens: number | null;
  /** The request body's `model`, for exact_request_model. */
  readonly requestModel: string;
  readonly needs: RequestNeeds;
}

export interface WorkspaceRouting {
  /** Explicit choice, or null: follow the default stamped at creation. */
  readonly routingMode: RoutingMode | null;
  readonly routingModeDefault: RoutingMode;
  readonly pinnedEndpointId: string | null;
}

export interface RouteInput {
  readonly query: RouteQuery;
  /** Generative endpoints that serve the workspace (any status), in catalog order. */
  readonly endpoints: readonly RouteEndpoint[];
  readonly settings: RouterSettings;
  /** null: the request runs project-wide (no workspace); semantic routing applies. */
  readonly workspace: WorkspaceRouting | null;
  readonly hasEmbeddingEndpoint: boolean;
  /** The router's own region (config server.region), compared exactly. */
  readonly region: string;
  readonly videoInputEnabled: boolean;
  /** Affinity state: the endpoint this conversation was last routed to, if any. */
  readonly incumbentId: string | null;
  /**
   * Endpoints whose measured latency misses the turn's objective (X-SLO-* headers, else the endpoint's
   * stored SLO): classification ranks them after those that meet it (docs/decisions.md). Absent: none.
   */
  readonly sloMisses?: ReadonlySet<string>;
}

export type RouteReason = 'rule' | 'pinned' | 'concrete' | 'single_endpoint' | 'matched' | 'sticky' | 'fallback';
export type FallbackReason = 'below_floor' | 'no_embedding_endpoint' | 'similarity_unavailable';
export type FilterName = 'modality' | 'context_window' | 'tool_calling' | 'structured_output' | 'reasoning';
/** `fallback`: unscored (no similarity to rank by), so the turn went to the default endpoint instead. */
export type DropReason = 'excluded' | FilterName | 'below_floor' | 'outranked' | 'switch_margin' | 'fallback';

export interface CandidateRow {
  readonly endpoint_id: string;
  readonly slug: string;
  /** The raw similarity (before the proximity bonus); null when the endpoint was not scored. */
  readonly similarity: number | null;
  /** null for the winner. */
  readonly dropped_by: DropReason | null;
}

export type FilteredOut = Readonly<Record<FilterName | 'excluded', number>>;

export interface RouteDecision {
  readonly endpointId: string;
  readonly reason: RouteReason;
  readonly ruleId: string | null;
  readonly matchedKeywords: readonly string[];
  readonly wasSticky: boolean;
  readonly wasFallback: boolean;
  readonly fallbackReason: FallbackReason | null;
  readonly evictedIncumbentId: string | null;
  /** Raw similarity of the served endpoint; null when no similarity was computed for it. */
  readonly similarity: number | null;
  /** Whether similarity was computed at all on this turn (the row omits similarity_score otherwise). */
  readonly scored: boolean;
  readonly candidates: readonly CandidateRow[];
  readonly filteredOut: FilteredOut;
  /** Classified turns (matched, sticky, fallback) update the conversation's affinity. */
  readonly classified: boolean;
}

/** Scores from the similarity search: raw cosine per endpoint id; null when the embedding call failed. */
export type Similarity = ReadonlyMap<string, number> | null;

export const NO_FILTERED: FilteredOut = { excluded: 0, modality: 0, context_window: 0, tool_calling: 0, structured_output: 0, reasoning: 0 };
