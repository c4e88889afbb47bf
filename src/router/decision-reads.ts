/**
 * The management reads of routing decision rows, from the router store (SQLite or PostgreSQL). The prompt
 * excerpt is opened here; a row sealed under another key (a lost or rotated key, or a replica with a key
 * of its own) reads as an empty preview, never an error (SPEC "Routing decision row": empty if
 * undecryptable).
 */
import type { RouterStore, StoredDecision } from '../core/store/router-store.js';
import type { RoutedUsage } from '../core/store/usage-store.js';
import type { SecretBox } from '../store/secret-box.js';

export interface DecisionReads {
  /**
   * Newest first, within [since, now], as the decisions route returns them; the excerpt of a row whose
   * workspace the reader may not read (`mayRead` false) is left sealed and reads empty.
   */
  list(projectId: string, since: number, limit: number, mayRead?: (workspaceId: string | null) => boolean): Promise<Record<string, unknown>[]>;
  countsByReason(projectId: string, since: number): Promise<Map<string, number>>;
  /**
   * The decision of one request made in [from, to], its prompt excerpt left sealed and out (the dashboard's
   * request detail: SPEC keeps excerpts to the decisions route); null when none was recorded or kept.
   */
  forRequest(projectId: string, requestId: string, from: number, to: number): Promise<Record<string, unknown> | null>;
  /** Turns and tokens per endpoint served by the router since `since` (the usage ledger, wherever it is stored). */
  usageByEndpoint: RoutedUsageReader;
}

export type RoutedUsageReader = (projectId: string, since: number) => Promise<RoutedUsage[]>;

export function createDecisionReads(store: RouterStore, box: SecretBox, usageByEndpoint: RoutedUsageReader): DecisionReads {
  const open = (r: StoredDecision): string => {
    if (r.sealedPreview === '') return '';
    try {
      return box.open(r.sealedPreview, r.requestId);
    } catch {
      return '';
    }
  };
  return {
    async list(projectId, since, limit, mayRead = () => true) {
      return (await store.decisions(projectId, since, limit)).map((r) => ({
        decision_request_id: r.requestId,
        timestamp: new Date(r.createdAt).toISOString(),
        workspace_id: r.workspaceId,
        query_preview: mayRead(r.workspaceId) ? open(r) : '',
        route_reason: r.routeReason,
        ...r.detail,
      }));
    },
    countsByReason: (projectId, since) => store.decisionCounts(projectId, since),
    async forRequest(projectId, requestId, from, to) {
      const r = await store.decisionOf(projectId, requestId, from, to);
      if (r === null) return null;
      // The stored detail has no excerpt (it is the sealed column); named last so nothing in it can add one.
      return { decision_request_id: r.requestId, timestamp: new Date(r.createdAt).toISOString(), workspace_id: r.workspaceId, route_reason: r.routeReason, ...r.detail, query_preview: undefined };
    },
    usageByEndpoint,
  };
}
