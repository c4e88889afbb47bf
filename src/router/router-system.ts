/**
 * Wires the semantic router: settings, rules, SLOs and aliases (router-state.ts: the router store, held in
 * memory), the profile-embedding cache (the instance's SQLite file), the dedicated similarity thread, the
 * affinity map, the decision log (the store's writer thread with SQLite, batches of its own with
 * PostgreSQL) and its reads.
 * Called once from main.ts; start() warms the profile indexes and schedules pruning, close() drains.
 *
 * src/router is the router's I/O shell: it may import core, schemas, pool and upstream (its storage comes from
 * main.ts: the router store, the SQLite file's repositories); app and routes import it.
 */
import type { Config } from '../config.js';
import { createAffinityMap, type AffinityMap } from '../core/routing/affinity-map.js';
import type { DeploymentDefaults } from '../core/routing/settings.js';
import type { WorkspaceChange } from '../core/store/router-store.js';
import type { Logger } from '../log.js';
import { createSimilarityPool } from '../pool/similarity-pool.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import type { Catalog } from '../store/catalog.js';
import type { DecisionLog } from '../store/decision-log.js';
import type { EmbeddingCache } from '../store/embedding-cache.js';
import type { SecretBox } from '../store/secret-box.js';
import type { StoreWriter } from '../store/store-writer.js';
import { embed } from '../upstream/embeddings.js';
import type { UpstreamClient } from '../upstream/upstream-client.js';
import { createBatchedDecisionLog } from './decision-batcher.js';
import { createDecisionReads, type DecisionReads, type RoutedUsageReader } from './decision-reads.js';
import { createProfileIndexes } from './profile-index.js';
import type { RouterSettingsCache, RouterState } from './router-state.js';
import { createSemanticRouter, type SemanticRouter } from './semantic-router.js';
import { createSloTracker, type SloTracker } from './slo-tracker.js';

/** Workspace routing fields written through the management API (routes/management-workspaces.ts). */
export interface WorkspaceRouting {
  apply(projectId: string, workspaceId: string, change: WorkspaceChange, now: number): Promise<void>;
}

export interface RouterSystem {
  readonly router: SemanticRouter;
  /** Latency objectives and measurements (issue 14): fed by streamed turns, read by the router. */
  readonly slos: SloTracker;
  readonly decisionLog: DecisionLog;
  readonly decisions: DecisionReads;
  readonly settings: RouterSettingsCache;
  /** Conversation affinity, shared with other replicas over the bus (src/coordination/bus-wiring.ts). */
  readonly affinity: AffinityMap;
  readonly workspaces: WorkspaceRouting;
  readonly defaults: DeploymentDefaults;
  /** Decision rows name the router that made them; a row of another router reads router_id null. */
  readonly routerId: string;
  start(): void;
  close(): Promise<void>;
}

/** What the router keeps in the instance's own SQLite file whatever the store kind, opened by main.ts. */
export interface RouterLocalStorage {
  readonly embeddingCache: EmbeddingCache;
  /** Seals the decision rows' texts at rest. */
  readonly box: SecretBox;
  readonly usageByEndpoint: RoutedUsageReader;
  /** The decision log on the store's writer thread (SQLite); not called with PostgreSQL. */
  readonly decisionLog: (onError: (message: string) => void) => DecisionLog;
}

export interface RouterSystemDeps {
  readonly config: Config;
  readonly local: RouterLocalStorage;
  /** Settings, rules, SLOs and aliases, and the router store (main.ts opens it before the routes need aliases). */
  readonly state: RouterState;
  /** The store's writer thread, shared with the usage ledger: decision rows are written there. */
  readonly storeWriter: StoreWriter;
  readonly pool: WorkerPool;
  readonly upstream: UpstreamClient;
  readonly catalog: Catalog;
  readonly now: () => number;
  readonly logger: Logger;
}

/** SPEC "Other limits": decisions are kept and listed for 24 hours. */
export const DECISION_WINDOW_MS = 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Profile indexing embeds up to 128 texts per call: give it longer than one query. */
const INDEXING_TIMEOUT_MS = 60_000;

export function createRouterSystem(deps: RouterSystemDeps): RouterSystem {
  const { config, logger } = deps;
  const rc = config.semantic_router;
  const similarity = createSimilarityPool();
  const indexes = createProfileIndexes({
    pool: deps.pool,
    similarity,
    cache: deps.local.embeddingCache,
    embedTexts: (e, texts) =>
      embed(deps.upstream, e, texts, { model: e.upstream.model, timeoutMs: INDEXING_TIMEOUT_MS }),
    now: deps.now,
    hnsw: rc.hnsw,
    onError: (message, key) => logger.warn({ index: key, message }, 'semantic router: profile index build failed; routing fails open until it succeeds'),
  });
  const { settings, store } = deps.state;
  const defaults: DeploymentDefaults = {
    enabled: rc.enabled,
    multi_model_enabled: rc.multi_model_enabled,
    similarity_floor: rc.similarity_floor,
    switch_margin: rc.switch_margin,
    proximity_bonus: rc.proximity_bonus,
  };
  const slos = createSloTracker(deps.state.slos);
  const affinity = createAffinityMap({ maxEntries: rc.affinity_max_entries, ttlMs: rc.affinity_ttl_ms });
  const router = createSemanticRouter({
    catalog: deps.catalog,
    settings,
    defaults,
    affinity,
    indexes,
    similarity,
    embedQuery: async (e, text, onAbort, requestId) => {
      const [vector] = await embed(deps.upstream, e, [text], {
        model: e.upstream.model,
        timeoutMs: rc.embedding_timeout_ms,
        onAbort,
        requestId,
      });
      if (!vector) throw new Error('no vector');
      return vector;
    },
    region: config.server.region,
    videoInputEnabled: config.features.video_input,
    searchK: rc.search_k,
    indexWaitMs: rc.embedding_timeout_ms,
    now: deps.now,
    upstreamHealthy: (endpointId) => deps.upstream.healthy(endpointId),
    sloMisses: (projectId, endpointIds, requested) => slos.misses(projectId, endpointIds, requested),
  });
  const { box } = deps.local;
  const decisionError = (message: string): void => logger.error({ message }, 'routing decision rows could not be written');
  const decisionLog = deps.state.shared ? createBatchedDecisionLog(store, box, decisionError) : deps.local.decisionLog(decisionError);
  const decisions = createDecisionReads(store, box, deps.local.usageByEndpoint);
  let pruneTimer: NodeJS.Timeout | null = null;
  const prune = (): void => void decisionLog.prune(deps.now() - DECISION_WINDOW_MS);

  return {
    router,
    slos,
    decisionLog,
    decisions,
    settings,
    affinity,
    workspaces: { apply: (projectId, workspaceId, change, now) => store.applyWorkspaceChange(projectId, workspaceId, change, now) },
    defaults,
    routerId: `rtr_${config.server.region}`,
    start() {
      router.warm(config.projects.map((p) => p.id));
      prune();
      pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
      pruneTimer.unref();
    },
    async close() {
      if (pruneTimer) clearInterval(pruneTimer);
      await decisionLog.close();
      // The writer thread counts its users: with PostgreSQL this log never used it, but holds a share.
      if (deps.state.shared) await deps.storeWriter.release();
      deps.state.close();
      await similarity.close();
      indexes.close();
    },
  };
}
