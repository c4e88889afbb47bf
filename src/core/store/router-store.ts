/**
 * The semantic router's storage port (issue 12): per-project router settings and rules, endpoint latency
 * objectives (SLOs), model aliases, and the routing decision rows. The request path never calls it: it
 * reads in-memory caches (src/router/) that reload after a write, this process's or another replica's
 * (`onChange`), and decision rows reach it in batches, off the path. Implemented once for SQLite and
 * PostgreSQL (store/router/), but for the decision rows (store/sqlite and store/postgres router-decisions.ts);
 * test/contract/router-store-contract.ts runs both.
 *
 * Profile embeddings are not here: they are a cache of what an embedding endpoint answers, rebuilt when
 * missing, so each instance keeps its own in its SQLite file (store/embedding-cache.ts).
 */
import type { StoredSettings } from '../routing/settings.js';
import type { RoutingRule } from '../routing/types.js';

export interface ProjectRouterState {
  readonly settings: StoredSettings;
  /** Stored order (SPEC: GET lists rules in stored order, not evaluation order). */
  readonly rules: readonly RoutingRule[];
}

export interface EndpointSlo {
  readonly projectId: string;
  readonly endpointId: string;
  readonly ttftMs: number | null;
  readonly tpotMs: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ModelAlias {
  readonly projectId: string;
  readonly alias: string;
  readonly target: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What a request reads of the aliases: synchronous, from memory or the embedded store. */
export interface ModelAliasReader {
  get(projectId: string, alias: string): ModelAlias | null;
  list(projectId: string): ModelAlias[];
}

/**
 * A routing decision row as stored (SPEC "Routing decision row"): the prompt excerpt sealed (AES-GCM with
 * the request id as associated data, store/secret-box.ts; '' for a turn without text), the other fields
 * of the row as one JSON object.
 */
export interface StoredDecision {
  readonly requestId: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly routeReason: string;
  readonly sealedPreview: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** A workspace's routing fields as the management API changes them (SPEC Semantic router behaviour 9). */
export interface WorkspaceChange {
  /** undefined: unchanged; null: cleared (follow the default stamped at creation). */
  readonly routingMode?: 'semantic' | 'concrete' | null;
  readonly pinnedEndpointId?: string | null;
  /** true: make it the project default; false: stop being the default (the project then has none). */
  readonly isDefault?: boolean;
}

export interface RouterStore {
  /** Every project's stored settings and rules (projects with none are absent). */
  routerStates(): Promise<Map<string, ProjectRouterState>>;
  saveRouterState(projectId: string, state: ProjectRouterState, now: number): Promise<void>;
  /**
   * Changes a project's settings and rules from what is stored now, not from a cached copy: `change` gets
   * the stored state (empty when none) and returns the next one, or throws to refuse (nothing written).
   * Writers of one project are serialized by the store (its row locked), so replicas writing rules at the
   * same moment do not lose one. A change that returns `current` itself writes nothing. Returns the state stored.
   */
  updateRouterState(projectId: string, change: (current: ProjectRouterState) => ProjectRouterState, now: number): Promise<ProjectRouterState>;

  /** The project's objectives, oldest first; every project's when `projectId` is omitted. */
  slos(projectId?: string): Promise<EndpointSlo[]>;
  /** Creates or replaces the endpoint's objectives; returns the stored row. */
  putSlo(projectId: string, endpointId: string, objectives: { ttftMs: number | null; tpotMs: number | null }, now: number): Promise<EndpointSlo>;

  /** The project's aliases, oldest first; every project's when `projectId` is omitted. */
  aliases(projectId?: string): Promise<ModelAlias[]>;
  /** false when the alias already exists. */
  createAlias(projectId: string, alias: string, target: string, now: number): Promise<boolean>;
  /** false when there is no such alias. */
  updateAlias(projectId: string, alias: string, target: string, now: number): Promise<boolean>;
  deleteAlias(projectId: string, alias: string): Promise<boolean>;

  /**
   * The workspace's routing fields, in one transaction, each stamped `*_set_at` (config sync leaves a
   * stamped value alone). The rows are the catalog's: the catalog reloads afterwards, and with PostgreSQL
   * every replica's does (the write notifies 'catalog').
   */
  applyWorkspaceChange(projectId: string, workspaceId: string, change: WorkspaceChange, now: number): Promise<void>;

  /** One batch, in one transaction. */
  insertDecisions(rows: readonly StoredDecision[]): Promise<void>;
  /** Newest first (insertion order breaks ties), created at or after `since`. */
  decisions(projectId: string, since: number, limit: number): Promise<StoredDecision[]>;
  decisionCounts(projectId: string, since: number): Promise<Map<string, number>>;
  /**
   * The decision of one request, looked for among the project's rows created in [from, to] (the
   * project/time index narrows to that window; request ids are not indexed). Null when there is none.
   */
  decisionOf(projectId: string, requestId: string, from: number, to: number): Promise<StoredDecision | null>;
  /** Deletes rows created before `before` (Unix ms). */
  pruneDecisions(before: number): Promise<void>;

  /**
   * `fn` runs after any replica committed a change to settings, rules, SLOs or aliases. The embedded store
   * has no such notice (processes sharing a file hear of writes over the bus): it never calls `fn`.
   */
  onChange(fn: () => void): () => void;
}
