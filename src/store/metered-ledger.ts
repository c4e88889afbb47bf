/**
 * The usage ledger, plus the token counters per endpoint of /metrics: fed from the one event every turn
 * ends in (its usage row, store/charging-ledger.ts), so each turn's tokens are counted once.
 */
import type { EndpointLabels, Metrics } from '../metrics.js';
import type { Catalog } from './catalog.js';
import type { UsageLedger } from './usage-ledger.js';

/** Token counters per endpoint, from the one event every turn ends in (its usage row). */
export function meteredLedger(inner: UsageLedger, metrics: Metrics, catalog: Catalog): UsageLedger {
  const labels = new Map<string, EndpointLabels>();
  const labelsOf = (projectId: string, endpointId: string): EndpointLabels | undefined => {
    let l = labels.get(endpointId);
    if (!l) {
      const e = catalog.endpoints(projectId).find((x) => x.id === endpointId);
      if (e) labels.set(endpointId, (l = { project: e.projectId, endpoint: e.slug, model: e.model.id }));
    }
    return l;
  };
  return {
    record(row) {
      inner.record(row);
      const l = labelsOf(row.projectId, row.endpointId);
      if (l) metrics.tokensBilled(l, row.promptTokens, row.completionTokens, row.cachedTokens);
    },
    settle: () => inner.settle(),
    journaled: () => inner.journaled(),
    close: () => inner.close(),
  };
}
