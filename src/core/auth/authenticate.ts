/**
 * The request-time half of SPEC "Authentication" 1-10, as pure functions: what the key may do is decided
 * here from records handed in, so every outcome is unit-testable without HTTP or SQLite.
 *
 * Order matters and follows SPEC 5: 401 (no usable key) before any 403, and a key never learns whether
 * another project or its endpoints exist (project_mismatch covers unknown projects too).
 */
import type { Scope } from './scopes.js';
import { GatewayError } from '../../errors.js';
import type { ApiKeyRecord, EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../records.js';
import { ipAllowed } from './ip-filter.js';
import { hashKeyValue, isWellFormedKey } from './key-token.js';

export interface KeyLookup {
  findCredential(hash: string): KeyCredential | null;
  /**
   * A key the in-memory lookup does not hold, read from the store (PostgreSQL, where the snapshot of
   * every key is refreshed by notices a moment behind another replica's commit): true when it was found,
   * and is then held. Absent where the lookup already reads the store on a miss (SQLite).
   */
  lookupMissed?(hash: string): Promise<boolean>;
}

export interface KeyCheck {
  readonly authorization: string | undefined;
  /** Asked only for a key with an IP filter (the peer address costs a syscall to read). */
  readonly clientIp: () => string;
  /** The project named by the path (external id or UUID). */
  readonly projectRef: string;
  readonly scope: Scope;
  readonly now: number;
}

export interface AuthenticatedKey {
  readonly key: ApiKeyRecord;
  readonly project: ProjectRecord;
}

const BEARER = /^Bearer +(\S+) *$/i;

export function authenticateKey(
  check: KeyCheck,
  keys: KeyLookup,
  findProject: (ref: string) => ProjectRecord | null,
): AuthenticatedKey {
  const value = parseBearer(check.authorization);
  const credential = keys.findCredential(hashKeyValue(value));
  if (!credential) throw new GatewayError('invalid_api_key', { message: 'The API key is not valid: no such key.' });
  const { key } = credential;
  // Before revocation: deleting the user revoked the key too, and the answer names the cause.
  if (credential.ownerDeleted) throw new GatewayError('key_inactive', { message: 'The API key belonged to a dashboard user who was deleted; it no longer works.' });
  // Revocation is final whatever the clock says: a clock stepping back must never revive a key.
  if (key.revokedAt !== null) throw new GatewayError('key_revoked');
  if (credential.validUntil !== null && credential.validUntil <= check.now) {
    throw new GatewayError('key_revoked', { message: 'This API key value was rotated out and its grace period has ended.' });
  }
  if (key.expiresAt !== null && key.expiresAt <= check.now) throw new GatewayError('key_expired');

  const project = findProject(check.projectRef);
  // SPEC Endpoints: the path names the project by its external id, or on management routes also by its
  // UUID. Elsewhere the key's own project named by UUID is refused with the path to use instead.
  if (project && project.id === key.projectId && check.projectRef !== project.id && check.scope !== 'management') {
    throw new GatewayError('project_mismatch', {
      message: `This route names the project by its external id, not its UUID (the UUID is accepted on management routes only): use /${key.projectId}/... in the path.`,
    });
  }
  if (!project || project.id !== key.projectId) {
    // The key holder may learn its own project: that is what makes a wrong path easy to fix.
    throw new GatewayError('project_mismatch', {
      message: `The API key does not belong to project ${check.projectRef}; it belongs to ${key.projectId}: use /${key.projectId}/... in the path.`,
    });
  }
  if (key.ipFilter !== null) {
    const clientIp = check.clientIp();
    if (!ipAllowed(key.ipFilter, clientIp)) {
      throw new GatewayError('ip_not_allowed', { message: `Requests from ${clientIp} are not allowed for this API key.` });
    }
  }
  if (!key.scopes.includes(check.scope)) {
    throw new GatewayError('scope_insufficient', {
      message: `This route needs the ${check.scope} scope; the API key has ${key.scopes.join(', ')}.`,
    });
  }
  return { key, project };
}

/** The hash of a well-formed bearer key the lookup does not hold (a miss worth asking the store about), else null. */
export function missedKeyHash(authorization: string | undefined, keys: KeyLookup): string | null {
  let value: string;
  try {
    value = parseBearer(authorization);
  } catch {
    return null;
  }
  const hash = hashKeyValue(value);
  return keys.findCredential(hash) === null ? hash : null;
}

function parseBearer(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === '') throw new GatewayError('authentication_required');
  const match = BEARER.exec(authorization);
  if (!match?.[1]) {
    throw new GatewayError('invalid_api_key', { message: 'The Authorization header must be "Bearer <API_KEY>".' });
  }
  if (!isWellFormedKey(match[1])) {
    throw new GatewayError('invalid_api_key', {
      message: 'The API key is malformed: keys look like svc_<project>_<43 base64url characters>.',
    });
  }
  return match[1];
}

export function authorizeEndpoint(key: ApiKeyRecord, endpoint: EndpointRecord): void {
  if (key.endpointId !== null && key.endpointId !== endpoint.id) {
    throw new GatewayError('endpoint_restricted', {
      message: `The API key is restricted to one endpoint and may not use ${endpoint.slug}.`,
    });
  }
}

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;

export interface WorkspaceChoice {
  /** Named by `ws_` path prefix, X-Workspace-Id or X-Service-Workspace (first one present). */
  readonly named: string | null;
  readonly namedBy: string;
  readonly workspaces: ReadonlyMap<string, WorkspaceRecord>;
  /** The project owning a workspace id of any project (the catalog's), so another project's is told apart. */
  readonly workspaceProject?: (workspaceId: string) => string | null;
  /** On direct routes: the endpoint must serve the workspace the request runs in. */
  readonly endpoint?: EndpointRecord;
}

/** A key confined to workspaces (SPEC Authentication 10) may use only those; an unconfined key, any of its project's. */
export function mayUseWorkspace(auth: AuthenticatedKey, workspaceId: string): boolean {
  const allowed = auth.key.allowedWorkspaceIds;
  return allowed === null || allowed.includes(workspaceId);
}

/**
 * SPEC Authentication 10. Returns the workspace the request runs in, or null for "the whole project"
 * (a key with no user and no list, in a project without a default workspace).
 */
export function resolveWorkspace(key: ApiKeyRecord, project: ProjectRecord, choice: WorkspaceChoice): string | null {
  const allowed = key.allowedWorkspaceIds;
  const { endpoint } = choice;
  if (choice.named !== null) {
    const named = choice.named;
    if (!WORKSPACE_ID.test(named)) {
      throw new GatewayError('invalid_workspace_id', {
        param: choice.namedBy,
        message: `${JSON.stringify(named)} is not a workspace id: workspace ids have the form ws_<hex>.`,
      });
    }
    if (allowed && !allowed.includes(named)) {
      throw new GatewayError('workspace_not_allowed', { message: `The API key may not use workspace ${named}.` });
    }
    if (!choice.workspaces.has(named)) {
      if (choice.workspaceProject?.(named) != null) {
        throw new GatewayError('project_mismatch', { param: choice.namedBy, message: `Workspace ${named} belongs to another project than the API key's (${project.id}).` });
      }
      throw new GatewayError('workspace_not_found', { param: choice.namedBy, message: `Project ${project.id} has no workspace ${named}.` });
    }
    if (endpoint && !endpoint.workspaceIds.includes(named)) {
      throw new GatewayError('workspace_not_allowed', { message: `Endpoint ${endpoint.slug} does not serve workspace ${named}.` });
    }
    return named;
  }
  if (allowed) {
    const live = allowed.filter((w) => choice.workspaces.has(w) && (!endpoint || endpoint.workspaceIds.includes(w)));
    // A user-owned key without a list of its own runs, like any key without a list, in the project's default
    // workspace, when its user can read that one.
    const fallback = project.defaultWorkspaceId;
    if (key.listFromOwner && fallback !== null && live.includes(fallback)) return fallback;
    if (live.length === 1) return live[0] ?? null;
    if (live.length === 0) {
      throw new GatewayError('workspace_not_allowed', {
        message: endpoint
          ? `Endpoint ${endpoint.slug} serves none of the API key's workspaces.`
          : "None of the API key's workspaces is live.",
      });
    }
    throw new GatewayError('workspace_required', {
      message: `The API key may use several workspaces (${live.join(', ')}): name one with X-Workspace-Id.`,
    });
  }
  if (project.defaultWorkspaceId !== null) {
    // An unconfined key reaches the whole project: when the endpoint does not serve the default workspace,
    // the request runs in the endpoint's first workspace rather than failing (docs/decisions.md).
    if (endpoint && !endpoint.workspaceIds.includes(project.defaultWorkspaceId)) return endpoint.workspaceIds[0] ?? null;
    return project.defaultWorkspaceId;
  }
  if (key.userId !== null) {
    throw new GatewayError('workspace_required', {
      message: `Project ${project.id} has no default workspace: name one with X-Workspace-Id.`,
    });
  }
  return endpoint ? (endpoint.workspaceIds[0] ?? null) : null;
}
