/**
 * The domain records the core works on. Storage maps rows to these; routes and the core never see SQL.
 * Times are Unix milliseconds; the wire renders seconds where SPEC says so.
 */
import type { EndpointConfig, ModelConfig, Scope } from '../config.js';
import type { IpFilter } from './auth/ip-filter.js';

export interface ProjectRecord {
  readonly id: string;
  readonly uuid: string;
  readonly slug: string;
  readonly name: string;
  readonly plan: 'free' | 'paid';
  readonly requestsPerMinute: number;
  readonly tokensPerMinute: number;
  readonly defaultWorkspaceId: string | null;
  readonly createdAt: number;
}

export interface WorkspaceRecord {
  readonly id: string;
  readonly projectId: string;
  readonly name: string;
  /** Explicit choice, or null: follow `routingModeDefault`, stamped at creation (SPEC Versioning). */
  readonly routingMode: 'semantic' | 'concrete' | null;
  readonly routingModeDefault: 'semantic' | 'concrete';
  /** SPEC Semantic router behaviour 1 (2): the endpoint this workspace's routed turns are pinned to. */
  readonly pinnedEndpointId: string | null;
  /** Operational (exec) workspaces may not be the project default. */
  readonly operational: boolean;
  readonly zeroDataRetention: boolean;
  readonly createdAt: number;
}

export interface EndpointRecord {
  readonly id: string;
  readonly projectId: string;
  readonly slug: string;
  readonly name: string;
  readonly kind: EndpointConfig['kind'];
  readonly tier: EndpointConfig['tier'];
  readonly status: EndpointConfig['status'];
  readonly region: string;
  /** Workspaces this endpoint serves; resolved to every workspace of the project when the file omits it. */
  readonly workspaceIds: readonly string[];
  readonly model: ModelConfig;
  readonly upstream: EndpointConfig['upstream'];
  readonly router: { readonly description: string; readonly examples: readonly string[] } | null;
  readonly createdAt: number;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly projectId: string;
  readonly name: string | null;
  readonly prefix: string;
  readonly scopes: readonly Scope[];
  readonly allowedIps: readonly string[];
  readonly blockedIps: readonly string[];
  readonly ipFilter: IpFilter | null;
  readonly expiresAt: number | null;
  readonly quotaRequests: number;
  readonly quotaWindow: number;
  readonly endpointId: string | null;
  readonly allowedWorkspaceIds: readonly string[] | null;
  /** Dashboard keys belong to a user; keys minted by config, CLI or API key have none. */
  readonly userId: string | null;
  /**
   * Who received the current value: the API key (`key_...`) that created or rotated this one through the
   * management API, or the dashboard user (`usr_...`) it was shown to; null for an operator's (config, CLI).
   * A key decides no approval asked for by a principal in its issuance chain (app/approval-decisions.ts).
   */
  readonly issuedBy: string | null;
  /**
   * Set on a credential read for authentication: `allowedWorkspaceIds` is the owning user's readable
   * workspaces, not a list of the key's own (SPEC Authentication 10: a user-owned key without a list).
   */
  readonly listFromOwner?: boolean;
  readonly source: 'config' | 'cli' | 'api' | 'dashboard';
  readonly createdAt: number;
  readonly revokedAt: number | null;
}

/** One value that authenticates a key: the current one, or a rotated-out one inside its grace period. */
export interface KeyCredential {
  readonly key: ApiKeyRecord;
  /** null: valid until the key is revoked or rotated. */
  readonly validUntil: number | null;
  /** A user-owned key whose user was deleted (SPEC "API key" states: 401 key_inactive). */
  readonly ownerDeleted?: boolean;
}
