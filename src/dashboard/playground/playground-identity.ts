/**
 * The identity a playground turn runs under (docs/decisions.md "Dashboard playground"): the signed-in user,
 * as if they held a dashboard key of their own with the `inference` scope and no list of its own. So the
 * API's own authentication decides what the turn may reach (SPEC Authentication 10: the workspaces the user
 * reads, checked on this very request), the project's request and token limiters count it, and the usage
 * row carries the user's id (`usr_...`) where an API turn carries its key's id.
 *
 * How it gets in: each turn carries a one-off bearer value
 * that exists only in this process's memory for the turn's lifetime, resolved by a catalog wrapper that only
 * the playground's turns see. No key row is written and nothing outside this process can present the value.
 */
import { hashKeyValue, mintKeyValue } from '../../core/auth/key-token.js';
import type { ApiKeyRecord, KeyCredential } from '../../core/records.js';
import type { Catalog } from '../../store/catalog.js';
import type { DashboardPrincipal } from '../principal.js';

/** The stand-in key of one user in one project: what an API turn's key record would say. */
export function playgroundKey(principal: DashboardPrincipal, projectId: string, now: number): ApiKeyRecord {
  const readable = principal.workspacesIn(projectId);
  return {
    id: principal.userId,
    projectId,
    name: 'dashboard playground',
    prefix: 'playground',
    scopes: ['inference'],
    allowedIps: [],
    blockedIps: [],
    // The session was checked instead; the page is served to wherever the user signed in from.
    ipFilter: null,
    expiresAt: null,
    quotaRequests: 0,
    quotaWindow: 60,
    endpointId: null,
    allowedWorkspaceIds: readable === 'all' ? null : [...readable],
    listFromOwner: readable !== 'all',
    userId: principal.userId,
    issuedBy: principal.userId,
    source: 'dashboard',
    createdAt: now,
    revokedAt: null,
  };
}

export interface TurnCredentials {
  /** The catalog the playground's turns authenticate against: only their own one-off values resolve. */
  readonly catalog: Catalog;
  /** A bearer value standing for `key` until `release` is called. */
  issue(key: ApiKeyRecord): { readonly bearer: string; release(): void };
}

export function createTurnCredentials(catalog: Catalog): TurnCredentials {
  const live = new Map<string, KeyCredential>();
  const wrapped: Catalog = {
    findCredential: (hash) => live.get(hash) ?? null,
    project: (ref) => catalog.project(ref),
    workspaces: (projectId) => catalog.workspaces(projectId),
    workspaceProject: (workspaceId) => catalog.workspaceProject(workspaceId),
    endpoint: (projectId, slug) => catalog.endpoint(projectId, slug),
    endpoints: (projectId) => catalog.endpoints(projectId),
    reload: () => undefined,
    close: () => undefined,
  };
  return {
    catalog: wrapped,
    issue(key) {
      const bearer = mintKeyValue('playground');
      const hash = hashKeyValue(bearer);
      live.set(hash, { key, validUntil: null });
      return { bearer, release: () => live.delete(hash) };
    },
  };
}
