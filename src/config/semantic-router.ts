/** The config file's `semantic_router:` section. */
import { z } from 'zod';

/**
 * The semantic router's deployment defaults (the values a project's settings follow until it sets them,
 * and what an explicit null on PATCH returns to), plus its operational knobs.
 */
export const semanticRouterSchema = z.strictObject({
  enabled: z.boolean().default(true),
  multi_model_enabled: z.boolean().default(true),
  similarity_floor: z.number().min(0).max(1).default(0.3),
  switch_margin: z.number().min(0).max(1).default(0.1),
  proximity_bonus: z.number().min(0).max(1).default(0.02),
  /** How long a conversation remembers its endpoint after its last routed turn. */
  affinity_ttl_ms: z.number().int().positive().default(6 * 3_600_000),
  affinity_max_entries: z.number().int().positive().default(100_000),
  /** The per-request embedding call; past it the router fails open to the fallback. */
  embedding_timeout_ms: z.number().int().positive().max(60_000).default(5000),
  /** Nearest profile vectors read per search; endpoints are scored by their best vector among them. */
  search_k: z.number().int().min(1).max(1024).default(32),
  hnsw: z
    .strictObject({
      m: z.number().int().min(2).max(100).default(16),
      ef_construction: z.number().int().min(10).max(2000).default(200),
      ef_search: z.number().int().min(1).max(2000).default(64),
    })
    .prefault({}),
});
