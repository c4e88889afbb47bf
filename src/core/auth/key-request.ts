/**
 * Creating an API key, shared by `switchboard keys create` and `POST /{project}/v1/management/api-keys`:
 * the rules of SPEC "API key" and Authentication 10 checked against the project's records, then the record
 * and its one-time value. Pure apart from the random value and id; the callers store the result.
 */
import type { Scope } from './scopes.js';
import type { ApiKeyRecord, EndpointRecord, ProjectRecord, WorkspaceRecord } from '../records.js';
import { parseRange } from './ip-filter.js';
import { hashKeyValue, keyPrefix, mintKeyValue, newKeyId } from './key-token.js';

export interface KeyRequest {
  readonly scopes: readonly Scope[];
  readonly name: string | null;
  readonly expiresAt: number | null;
  readonly endpointId: string | null;
  readonly allowedWorkspaceIds: readonly string[] | null;
  readonly allowedIps: readonly string[];
  readonly blockedIps: readonly string[];
  readonly quotaRequests: number;
  readonly quotaWindow: number;
}

/** The project's live records the request is checked against. */
export interface KeyRequestContext {
  readonly project: ProjectRecord;
  readonly endpoints: readonly EndpointRecord[];
  readonly workspaces: ReadonlyMap<string, WorkspaceRecord>;
  readonly now: number;
}

/** A rule broken by the request; `field` is the wire path (`allowed_workspace_ids[1]`), mapped to a flag by the CLI. */
export class KeyRequestError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.name = 'KeyRequestError';
    this.field = field;
  }
}

export type NewKeyRecord = Omit<ApiKeyRecord, 'ipFilter' | 'revokedAt'>;

export interface MintedKey {
  readonly record: NewKeyRecord;
  /** Shown once, to the creator; never stored. */
  readonly value: string;
  readonly hash: string;
}

export function checkKeyRequest(r: KeyRequest, ctx: KeyRequestContext): void {
  const { project } = ctx;
  for (const [field, list] of [['allowed_ips', r.allowedIps], ['blocked_ips', r.blockedIps]] as const) {
    list.forEach((ip, i) => {
      if (parseRange(ip) === null) throw new KeyRequestError(`${field}[${i}]`, `must be an IPv4/IPv6 address or CIDR range; got ${JSON.stringify(ip)}`);
    });
  }
  if (r.expiresAt !== null && r.expiresAt <= ctx.now) throw new KeyRequestError('expires_at', 'must be in the future');
  if (r.endpointId !== null && !ctx.endpoints.some((e) => e.id === r.endpointId)) {
    throw new KeyRequestError('endpoint_id', `names no endpoint of project ${project.id} (${r.endpointId})`);
  }
  const list = r.allowedWorkspaceIds;
  if (list !== null) {
    // SPEC Authentication 10: an empty list, a list with management, or a workspace that is not live -> 400.
    if (list.length === 0) throw new KeyRequestError('allowed_workspace_ids', 'must name at least one workspace (omit it to reach every workspace)');
    if (r.scopes.includes('management')) throw new KeyRequestError('allowed_workspace_ids', 'cannot be combined with the management scope');
    list.forEach((w, i) => {
      if (!ctx.workspaces.has(w)) throw new KeyRequestError(`allowed_workspace_ids[${i}]`, `names no workspace of project ${project.id} (${w})`);
    });
  }
}

/**
 * SPEC Authentication 10: a confined key never creates keys; a personal (user-owned) key only when its
 * user owns the project (`creatorOwnsProject`: the caller looked the user's role up). Returns the reason
 * to refuse, or null.
 */
export function keyCreationRefusal(creator: ApiKeyRecord, creatorOwnsProject: boolean): string | null {
  // A personal key's list is its user's readable workspaces (listFromOwner), not a confinement of its own.
  if (creator.allowedWorkspaceIds !== null && creator.listFromOwner !== true) return 'A key confined to workspaces may not create API keys.';
  if (creator.userId !== null && !creatorOwnsProject) {
    return `A personal API key may create keys only when its user owns the project; user ${creator.userId} is not an owner of it.`;
  }
  return null;
}

/** The workspaces a principal reaches: every one, or a list (a user's readable ones, a confined key's). */
export type Reach = 'all' | readonly string[];

/**
 * SPEC Authentication 10 ("never others"): a key value may not reach further than the principal that
 * receives it. A new key with no user reaches its list, or every workspace without one. Returns the
 * reason to refuse, or null.
 */
export function creationReachRefusal(creatorReach: Reach, requested: readonly string[] | null): string | null {
  if (creatorReach === 'all') return null;
  if (requested === null) return 'This API key reaches only some workspaces; the key it creates must name allowed_workspace_ids among them (without a list it would reach every workspace).';
  const outside = requested.find((w) => !creatorReach.includes(w));
  return outside === undefined ? null : `allowed_workspace_ids names workspace ${outside}, which this API key cannot reach.`;
}

/**
 * The same rule for a rotation, which hands the rotating principal the key's new value: allowed when it
 * reaches every workspace, rotates its own user's key, or rotates a key confined to workspaces it reaches.
 * Another user's key (reaching what that user reads) or a key with no user and no list is refused.
 */
export function rotationReachRefusal(rotatorReach: Reach, rotatorUserId: string | null, key: ApiKeyRecord): string | null {
  if (rotatorReach === 'all') return null;
  if (key.userId !== null && key.userId === rotatorUserId) return null;
  const list = key.userId === null ? key.allowedWorkspaceIds : null;
  if (list !== null && list.every((w) => rotatorReach.includes(w))) return null;
  return `Rotating API key ${key.id} would give you a value that reaches workspaces you cannot read; someone who reads every workspace it reaches must rotate it.`;
}

/**
 * Checks the request and mints the key: `svc_<segment>_<43 base64url chars>`, where the segment is the
 * project slug (CLI, like the dashboard) or `mgmt` (management API).
 */
export function mintKey(r: KeyRequest, ctx: KeyRequestContext, origin: { source: NewKeyRecord['source']; valueSegment: string }): MintedKey {
  checkKeyRequest(r, ctx);
  const value = mintKeyValue(origin.valueSegment);
  const record: NewKeyRecord = {
    id: newKeyId(),
    projectId: ctx.project.id,
    name: r.name,
    prefix: keyPrefix(value),
    scopes: [...new Set(r.scopes)],
    allowedIps: [...r.allowedIps],
    blockedIps: [...r.blockedIps],
    expiresAt: r.expiresAt,
    quotaRequests: r.quotaRequests,
    quotaWindow: r.quotaWindow,
    endpointId: r.endpointId,
    allowedWorkspaceIds: r.allowedWorkspaceIds ? [...r.allowedWorkspaceIds] : null,
    userId: null,
    issuedBy: null,
    source: origin.source,
    createdAt: ctx.now,
  };
  return { record, value, hash: hashKeyValue(value) };
}
