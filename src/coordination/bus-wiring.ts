/**
 * Keeps the in-memory state of N gateway processes right through the bus (issue 12). Every cache a
 * management write refreshes, every budget charge and every conversation affinity is told to the others:
 *
 *   invalidate 'catalog': projects, workspaces, endpoints, key credentials (store/catalog.ts: key
 *     management, workspace PATCH, dashboard users through reloadCredentials) and API budget caps;
 *   invalidate 'router': semantic-router settings and rules (router/router-state.ts's cache);
 *   invalidate 'all': both;
 *   budget_charge: a turn's spend, applied without a threshold alert (the charging replica sends it);
 *   affinity: the endpoint a conversation was routed to (SPEC Semantic router behaviour 5).
 *
 * A bus that lost messages (Redis pub/sub while this replica's subscriber was away) says so once it is
 * subscribed again: every cache is reloaded as for invalidate 'all', and budget spend is raised to the
 * shared ledger's (docs/decisions.md "Budget spend follows the ledger"). Lost affinities are not rebuilt:
 * a conversation routed afresh is a routing choice, not a wrong answer.
 *
 * The publishing side wraps the in-process calls (catalog.reload, settings.update, affinity.set) instead of
 * threading a bus through every writer: every writer holds the same object, so one wrapper catches all of
 * them, and a writer added later is covered too. A received message calls the unwrapped function, so it
 * is never published again. Model aliases and SLOs have no cache (one SELECT per read), so nothing to do.
 *
 * With the embedded default (localBus) nothing is wrapped and nothing subscribed: no cost on the hot path.
 * main.ts calls attachBus once, after the router system exists, before listening.
 */
import { localBus, type Bus, type BusMessage } from '../core/coordination/bus.js';
import type { ApiCapsEntry, Budgets } from '../core/limits/budgets.js';
import type { AffinityMap } from '../core/routing/affinity-map.js';
import type { Catalog } from '../store/catalog.js';
import type { RouterSettingsCache } from '../router/router-state.js';

export interface BusWiringDeps {
  readonly catalog: Catalog;
  readonly routerSettings: RouterSettingsCache;
  readonly affinity: AffinityMap;
  readonly budgets: Budgets;
  /** The API budget caps as stored (budgetsRepo.list), read again when another replica changed one. */
  readonly storedBudgetCaps: () => readonly ApiCapsEntry[];
  /** Raises budget spend to the usage ledger's (wiring/limits.ts), when charges from the bus may have been lost. */
  readonly resyncBudgetSpend: () => void;
}

export interface BusWiring {
  /** Restores the unwrapped functions and stops listening (tests; a gateway closes its bus instead). */
  detach(): void;
}

const CATALOG_CHANGED: BusMessage = { kind: 'invalidate', what: 'catalog' };
const ROUTER_CHANGED: BusMessage = { kind: 'invalidate', what: 'router' };

export function attachBus(bus: Bus, deps: BusWiringDeps): BusWiring {
  if (bus === localBus) return { detach: () => undefined };
  const { catalog, routerSettings, affinity, budgets } = deps;
  const reloadHere = catalog.reload;
  const updateHere = routerSettings.update;
  const setHere = affinity.set;

  catalog.reload = () => {
    // Returned: a PostgreSQL catalog's writer awaits its reload (store/catalog.ts).
    const reloaded = reloadHere();
    bus.publish(CATALOG_CHANGED);
    return reloaded;
  };
  routerSettings.update = async (projectId, change, now) => {
    const state = await updateHere(projectId, change, now);
    bus.publish(ROUTER_CHANGED);
    return state;
  };
  affinity.set = (key, endpointId, now) => {
    setHere(key, endpointId, now);
    bus.publish({ kind: 'affinity', key, endpointId, at: now });
  };
  budgets.onLocalChange({
    charged: (projectId, endpointId, workspaceId, tokens, costNanos, at) => bus.publish({ kind: 'budget_charge', projectId, endpointId, workspaceId, tokens, costNanos, at }),
    apiCapsSet: () => bus.publish(CATALOG_CHANGED),
  });

  const invalidate = (what: 'catalog' | 'router' | 'all'): void => {
    if (what !== 'router') {
      void reloadHere();
      budgets.replaceApiCaps(deps.storedBudgetCaps());
    }
    if (what !== 'catalog') void routerSettings.reload();
  };
  const stopResync = bus.onResubscribed(() => {
    invalidate('all');
    deps.resyncBudgetSpend();
  });
  const unsubscribe = bus.subscribe((message) => {
    switch (message.kind) {
      case 'invalidate':
        invalidate(message.what);
        return;
      case 'budget_charge':
        budgets.applyRemoteCharge(message.projectId, message.endpointId, message.workspaceId, message.tokens, message.at, message.costNanos);
        return;
      case 'affinity':
        setHere(message.key, message.endpointId, message.at);
        return;
    }
  });

  return {
    detach() {
      unsubscribe();
      stopResync();
      catalog.reload = reloadHere;
      routerSettings.update = updateHere;
      affinity.set = setHere;
      budgets.onLocalChange(null);
    },
  };
}
