/**
 * Latency objectives (issue 14): the stored per-endpoint SLOs (router-state.ts), the measured latency
 * of streamed turns (core/routing/latency-window.ts), and what the router and the health route ask of
 * them. A turn's objective for an endpoint is the request's X-SLO-* header values where sent, else the
 * endpoint's stored SLO; docs/decisions.md "Rerank, SLOs and model aliases" has the ranking rule.
 */
import { attainment, LatencyWindows, type Attainment, type LatencyObjective, type MeasuredLatency } from '../core/routing/latency-window.js';
import type { EndpointSlo } from '../core/store/router-store.js';
import type { SloBook } from './router-state.js';

export interface SloAttainment {
  readonly endpoint_id: string;
  readonly endpoint_slug: string;
  readonly objective: { readonly ttft_ms: number | null; readonly tpot_ms: number | null };
  readonly measured: { readonly ttft_ms: number | null; readonly tpot_ms: number | null; readonly samples: number };
  readonly attainment: Attainment;
}

export interface SloTracker {
  /** The stored objectives (read synchronously: from memory, or the embedded file) and their writes. */
  readonly stored: SloBook;
  /** One completed streamed turn of the endpoint. */
  record(endpointId: string, ttftMs: number, tpotMs: number | null): void;
  measured(endpointId: string): MeasuredLatency;
  /** The endpoints (of those given) whose measured latency misses the turn's objective. */
  misses(projectId: string, endpointIds: readonly string[], requested: LatencyObjective | null): ReadonlySet<string>;
  /** Per endpoint of the project: its stored objective, what was measured, and whether it meets it. */
  report(projectId: string, endpoints: readonly { readonly id: string; readonly slug: string }[]): SloAttainment[];
}

const NONE: ReadonlySet<string> = new Set();

/** The header values where sent, else the stored SLO's, one measure at a time. */
export function objectiveFor(stored: EndpointSlo | undefined, requested: LatencyObjective | null): LatencyObjective {
  return { ttftMs: requested?.ttftMs ?? stored?.ttftMs ?? null, tpotMs: requested?.tpotMs ?? stored?.tpotMs ?? null };
}

export function createSloTracker(book: SloBook, windows = new LatencyWindows()): SloTracker {
  const storedOf = (projectId: string): Map<string, EndpointSlo> => new Map(book.list(projectId).map((s) => [s.endpointId, s]));
  return {
    stored: book,
    record: (endpointId, ttftMs, tpotMs) => windows.record(endpointId, ttftMs, tpotMs),
    measured: (endpointId) => windows.measured(endpointId),
    misses(projectId, endpointIds, requested) {
      const measuredAny = endpointIds.some((id) => windows.measured(id).samples > 0);
      if (!measuredAny) return NONE;
      const stored = storedOf(projectId);
      const out = new Set<string>();
      for (const id of endpointIds) if (attainment(windows.measured(id), objectiveFor(stored.get(id), requested)) === 'misses') out.add(id);
      return out;
    },
    report(projectId, endpoints) {
      const stored = storedOf(projectId);
      return endpoints.map((e) => {
        const objective = objectiveFor(stored.get(e.id), null);
        const m = windows.measured(e.id);
        return {
          endpoint_id: e.id,
          endpoint_slug: e.slug,
          objective: { ttft_ms: objective.ttftMs, tpot_ms: objective.tpotMs },
          measured: { ttft_ms: round(m.ttftMs), tpot_ms: round(m.tpotMs), samples: m.samples },
          attainment: attainment(m, objective),
        };
      });
    },
  };
}

const round = (v: number | null): number | null => (v === null ? null : Math.round(v * 10) / 10);
