/**
 * The catalog's storage port (issue 12): projects, workspaces, endpoints and API keys with their values'
 * hashes. The config file is synced into it at start; key management (app/key-management.ts) writes keys
 * through it; the in-memory catalog (store/catalog.ts) reads a snapshot of it, so a request never waits
 * on it. Implementation: store/catalog/catalog-store.ts, one for both backends.
 */
import type { Config, Scope } from '../../config.js';
import type { ApiKeyRecord, EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../records.js';

export interface SyncSummary {
  projects: number;
  endpoints: number;
  endpointsDeleted: number;
  keys: number;
  keysRevoked: number;
}

/** A key as inserted: not revoked, its IP filter compiled when read back. */
export type NewApiKey = Omit<ApiKeyRecord, 'ipFilter' | 'revokedAt'>;

export interface CatalogSnapshot {
  readonly projects: readonly ProjectRecord[];
  /** Live workspaces (not deleted). */
  readonly workspaces: readonly WorkspaceRecord[];
  /** Live endpoints (not deleted). */
  readonly endpoints: readonly EndpointRecord[];
  /**
   * By value hash: every stored credential, revoked and rotated-out ones included, so that a refused key is
   * answered as SQLite answers it (key_revoked, not invalid_api_key). null: this store is cheap enough to ask
   * per key (SQLite, read lazily by the catalog).
   */
  readonly credentials: ReadonlyMap<string, KeyCredential> | null;
}

/** A key's next value (CatalogStore.rotate). */
export interface KeyRotation {
  readonly id: string;
  /** The new value's SHA-256 and prefix. */
  readonly hash: string;
  readonly prefix: string;
  readonly now: number;
  readonly graceUntil: number;
  /**
   * SPEC Authentication 3 (scopes change only by rotation): the key's new scope list, in the same
   * transaction; absent: unchanged. Scopes belong to the key, so a value in its grace has them too.
   */
  readonly scopes?: readonly Scope[];
  /**
   * Who receives the new value (ApiKeyRecord.issuedBy): a key or user id; absent: unchanged (an operator's
   * CLI, or a key rotating itself: the holder stays who it was).
   */
  readonly issuedBy?: string;
}

export interface CatalogStore {
  /** The config file's projects, workspaces, endpoints and keys, in one transaction (store/catalog/config-sync.ts says how). */
  syncConfig(config: Config, now: number): Promise<SyncSummary>;
  loadSnapshot(): Promise<CatalogSnapshot>;
  findCredential(hash: string): Promise<KeyCredential | null>;
  listForProject(projectId: string): Promise<ApiKeyRecord[]>;
  findInProject(projectId: string, id: string): Promise<ApiKeyRecord | null>;
  /** Key id -> the latest end of grace among its rotated-out values (keys never rotated are absent). */
  rotatedValuesValidUntil(projectId: string): Promise<Map<string, number>>;
  /** A key with its first value, in one transaction. */
  insert(key: NewApiKey, hash: string): Promise<void>;
  /** Permanent (SPEC "API key" states); false when the key was already revoked. */
  revoke(id: string, now: number, reason: string): Promise<boolean>;
  /**
   * SPEC Authentication 11: the current value stays valid until `graceUntil`, the new one is current, the
   * prefix follows it. Only an active key (not revoked, not expired at `now`) rotates, checked in the same
   * transaction as the change, so a revocation by another process cannot fall in between; false otherwise.
   */
  rotate(rotation: KeyRotation): Promise<boolean>;
  close(): Promise<void>;
}
