/**
 * The semantic router's I/O shell around core/routing: it gathers the decision's inputs from memory
 * (catalog, settings, affinity), runs the pure decision, and does the one piece of I/O a classification
 * needs: embed the composed query (one upstream call) and search the workspace's profile index on the
 * similarity thread. Any failure there fails open (SPEC behaviour 3): the decision falls back, the turn
 * is served. Nothing here runs SQL.
 */
import { finishRoute, planRoute, type ClassifyPlan } from '../core/routing/decide.js';
import { withHealthyUpstreams } from '../core/routing/eligibility.js';
import { affinityKey, composeQuery, estimateInputTokens, requestNeeds, requestedOutput, type RoutedRequest } from '../core/routing/query.js';
import { effectiveSettings, type DeploymentDefaults } from '../core/routing/settings.js';
import type { RouteDecision, RouteInput, RouterSettings, Similarity, WorkspaceRouting } from '../core/routing/types.js';
import type { AffinityMap } from '../core/routing/affinity-map.js';
import type { LatencyObjective } from '../core/routing/latency-window.js';
import type { EndpointRecord } from '../core/records.js';
import type { SimilarityPool } from '../pool/similarity-pool.js';
import type { Catalog } from '../store/catalog.js';
import type { IndexHandle, ProfileIndexes } from './profile-index.js';
import type { RouterSettingsCache } from './router-state.js';

export interface RouteRequest {
  readonly projectId: string;
  /** null: project-wide (a key with no user and no list, in a project without a default workspace). */
  readonly workspaceId: string | null;
  /** An endpoint-restricted key may only be routed to its endpoint. */
  readonly keyEndpointId: string | null;
  readonly chat: RoutedRequest & { readonly model: string };
  /** The X-Conversation-Id header, when sent. */
  readonly conversationId: string | undefined;
  /** Registers a client-abort callback (cheaper than an AbortSignal per request); aborts the embedding call. */
  readonly onAbort?: ((listener: () => void) => void) | undefined;
  /** The client request's id, on the operator's log line of a failed embedding call. */
  readonly requestId?: string | undefined;
  /** The X-SLO-TTFT-Ms / X-SLO-TPOT-Ms headers' objective, when the request sent a valid one. */
  readonly slo?: LatencyObjective | null | undefined;
  /**
   * A sub-task of the multimodel route: no region bonus (SPEC behaviour 7 applies to chat and responses
   * only) and no conversation affinity (each sub-task goes to its own best endpoint, and a plan's steps
   * must not move the conversation's incumbent).
   */
  readonly subTask?: boolean;
}

export interface Routed {
  readonly endpoint: EndpointRecord;
  readonly decision: RouteDecision;
}

export interface SemanticRouterDeps {
  readonly catalog: Catalog;
  readonly settings: Pick<RouterSettingsCache, 'get'>;
  readonly defaults: DeploymentDefaults;
  readonly affinity: AffinityMap;
  readonly indexes: ProfileIndexes;
  readonly similarity: SimilarityPool;
  /** Embeds one query text; rejects on failure or timeout. */
  readonly embedQuery: (embedding: EndpointRecord, text: string, onAbort: RouteRequest['onAbort'], requestId: string | undefined) => Promise<Float32Array<ArrayBuffer>>;
  readonly region: string;
  readonly videoInputEnabled: boolean;
  readonly searchK: number;
  /** How long a request may wait for its workspace's first profile index before failing open. */
  readonly indexWaitMs: number;
  readonly now: () => number;
  /** Whether some upstream server of the endpoint takes requests now; absent: all are taken as healthy. */
  readonly upstreamHealthy?: (endpointId: string) => boolean;
  /** The endpoints missing the turn's latency objective (router/slo-tracker.ts); absent: none do. */
  readonly sloMisses?: (projectId: string, endpointIds: readonly string[], requested: LatencyObjective | null) => ReadonlySet<string>;
}

export interface SemanticRouter {
  route(r: RouteRequest): Promise<Routed>;
  settingsOf(projectId: string): RouterSettings;
  /** The embedding endpoint the router uses for a workspace, if the project has one. */
  embeddingEndpoint(projectId: string, workspaceId: string | null): EndpointRecord | null;
  /**
   * The endpoints a routed turn in the workspace may be dispatched to by classification: active generative
   * endpoints serving it (every one when null), within an endpoint-bound key's reach, minus those the
   * project excludes from routing. Catalog order.
   */
  routableEndpoints(projectId: string, workspaceId: string | null, keyEndpointId: string | null): EndpointRecord[];
  /** Builds every workspace's index in the background (at start), so first requests do not wait. */
  warm(projectIds: readonly string[]): void;
}

export function createSemanticRouter(deps: SemanticRouterDeps): SemanticRouter {
  const settingsOf = (projectId: string): RouterSettings => {
    const stored = deps.settings.get(projectId);
    return effectiveSettings(stored.settings, stored.rules, deps.defaults);
  };

  // Chosen once per catalog version (the catalog hands out the same array until it reloads), as below.
  const embeddingMemo = new Map<string, { readonly source: readonly EndpointRecord[]; readonly chosen: EndpointRecord | null }>();

  function embeddingEndpoint(projectId: string, workspaceId: string | null): EndpointRecord | null {
    const source = deps.catalog.endpoints(projectId);
    const key = `${projectId}/${workspaceId ?? '*'}`;
    const hit = embeddingMemo.get(key);
    if (hit?.source === source) return hit.chosen;
    const active = source.filter((e) => e.kind === 'embedding' && e.status === 'active');
    const serving = active.filter((e) => workspaceId === null || e.workspaceIds.includes(workspaceId));
    const chosen = [...(serving.length > 0 ? serving : active)].sort((a, b) => (a.slug < b.slug ? -1 : 1))[0] ?? null;
    embeddingMemo.set(key, { source, chosen });
    return chosen;
  }

  // The catalog hands out the same array until it reloads: the members (and, in ProfileIndexes, their
  // signature) are computed once per catalog version, not per request.
  const indexedMemo = new Map<string, { readonly source: readonly EndpointRecord[]; readonly members: EndpointRecord[] }>();

  /** Active generative endpoints of the workspace: what its index holds (exclusions are applied at search). */
  function indexed(projectId: string, workspaceId: string | null): EndpointRecord[] {
    const source = deps.catalog.endpoints(projectId);
    const key = `${projectId}/${workspaceId ?? '*'}`;
    const hit = indexedMemo.get(key);
    if (hit?.source === source) return hit.members;
    const members = source.filter((e) => e.kind === 'chat' && e.status === 'active' && (workspaceId === null || e.workspaceIds.includes(workspaceId)));
    indexedMemo.set(key, { source, members });
    return members;
  }

  return {
    settingsOf,
    embeddingEndpoint,
    routableEndpoints(projectId, workspaceId, keyEndpointId) {
      const excluded = new Set(settingsOf(projectId).excludedEndpointIds);
      return indexed(projectId, workspaceId).filter((e) => (keyEndpointId === null || e.id === keyEndpointId) && !excluded.has(e.id));
    },
    async route(r) {
      const now = deps.now();
      const serving = deps.catalog
        .endpoints(r.projectId)
        .filter((e) => e.kind === 'chat' && (r.workspaceId === null || e.workspaceIds.includes(r.workspaceId)))
        .filter((e) => r.keyEndpointId === null || e.id === r.keyEndpointId);
      const endpoints = deps.upstreamHealthy ? withHealthyUpstreams(serving, deps.upstreamHealthy) : serving;
      const embedding = embeddingEndpoint(r.projectId, r.workspaceId);
      const conversation = r.subTask ? null : affinityKey(r.conversationId, r.chat.messages);
      const settings = settingsOf(r.projectId);
      const input: RouteInput = {
        query: {
          text: composeQuery(r.chat.messages),
          inputTokens: estimateInputTokens(r.chat),
          maxOutputTokens: requestedOutput(r.chat),
          requestModel: r.chat.model,
          needs: requestNeeds(r.chat),
        },
        endpoints,
        settings: r.subTask && settings.proximityBonus !== 0 ? { ...settings, proximityBonus: 0 } : settings,
        workspace: workspaceRouting(deps.catalog, r.projectId, r.workspaceId),
        hasEmbeddingEndpoint: embedding !== null,
        region: deps.region,
        videoInputEnabled: deps.videoInputEnabled,
        incumbentId: conversation === null ? null : deps.affinity.get(`${r.projectId}/${r.workspaceId ?? '*'}/${conversation}`, now),
      };
      const planned = planRoute(input);
      // Objectives only order a classification's candidates, so the stored SLOs are read only then; the plan
      // is copied only when some endpoint misses (the common turn keeps its one shape, as elsewhere here).
      const misses = planned.kind === 'classify' && deps.sloMisses ? deps.sloMisses(r.projectId, planned.eligible.map((e) => e.id), r.slo ?? null) : null;
      const plan = planned.kind === 'classify' && misses !== null && misses.size > 0 ? { ...planned, input: { ...input, sloMisses: misses } } : planned;
      const decision = plan.kind === 'decided' ? plan.decision : finishRoute(plan, await score(deps, indexed(r.projectId, r.workspaceId), r, plan, embedding as EndpointRecord));
      if (decision.classified && conversation !== null) {
        deps.affinity.set(`${r.projectId}/${r.workspaceId ?? '*'}/${conversation}`, decision.endpointId, deps.now());
      }
      const endpoint = endpoints.find((e) => e.id === decision.endpointId) as EndpointRecord;
      return { endpoint, decision };
    },
    warm(projectIds) {
      for (const project of projectIds) {
        const workspaces = [...deps.catalog.workspaces(project).keys()];
        for (const ws of workspaces.length > 0 ? workspaces : [null]) {
          const embedding = embeddingEndpoint(project, ws);
          const members = indexed(project, ws);
          if (embedding && members.length >= 2) void deps.indexes.ensure(`${project}/${ws ?? '*'}`, members, embedding);
        }
      }
    },
  };
}

/** Similarity of the query to the eligible endpoints' profiles; null when the index or the query embedding is not to be had. */
async function score(deps: SemanticRouterDeps, members: EndpointRecord[], r: RouteRequest, plan: ClassifyPlan, embedding: EndpointRecord): Promise<Similarity> {
  const key = `${r.projectId}/${r.workspaceId ?? '*'}`;
  const handle = await withTimeout(deps.indexes.ensure(key, members, embedding), deps.indexWaitMs);
  if (!handle) return null;
  let query: Float32Array<ArrayBuffer>;
  try {
    query = await deps.embedQuery(embedding, plan.input.query.text, r.onAbort, r.requestId);
  } catch {
    return null;
  }
  if (handle.count === 0) return new Map();
  if (query.length !== handle.dimensions) return null;
  const eligible = new Int32Array(plan.eligible.length);
  let n = 0;
  for (const e of plan.eligible) {
    const p = handle.positions.get(e.id);
    if (p !== undefined) eligible[n++] = p;
  }
  // Positions are unique: when every indexed endpoint is eligible the search needs no filter.
  const allowed = n === handle.endpointIds.length ? null : eligible.slice(0, n);
  const incumbent = plan.incumbent ? handle.positions.get(plan.incumbent.id) : undefined;
  // Not abortable: a search takes well under a millisecond.
  const result = await deps.similarity.search({ key, version: handle.version, query, k: deps.searchK, allowed, exact: incumbent === undefined ? NO_POSITIONS : Int32Array.of(incumbent) });
  if (!result.found) {
    deps.indexes.invalidate(handle);
    return null;
  }
  return scoresById(handle, result.endpoints, result.scores);
}

/** Never written: sent (cloned, empty) when a search has no incumbent to score. */
const NO_POSITIONS = new Int32Array(0);

function workspaceRouting(catalog: Catalog, projectId: string, workspaceId: string | null): WorkspaceRouting | null {
  const w = workspaceId === null ? undefined : catalog.workspaces(projectId).get(workspaceId);
  return w ? { routingMode: w.routingMode, routingModeDefault: w.routingModeDefault, pinnedEndpointId: w.pinnedEndpointId } : null;
}

function scoresById(handle: IndexHandle, positions: Int32Array, scores: Float32Array): Map<string, number> {
  const out = new Map<string, number>();
  positions.forEach((p, i) => {
    const id = handle.endpointIds[p];
    if (id !== undefined) out.set(id, scores[i] ?? 0);
  });
  return out;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      () => {
        clearTimeout(timer);
        resolve(null);
      },
    );
  });
}
