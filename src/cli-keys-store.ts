/**
 * What `switchboard keys` does to the store: mint (with --config the file is synced first so the project
 * exists), list, revoke, rotate. Each opens an existing store, never a new one, and closes it. Revoke and
 * rotate are the management API's operations (routes/management-keys.ts: permanent revocation, rotation
 * of an active key only, the old value valid 24 h more); the CLI mints values under the project's slug,
 * as `keys create` does, where the API mints `svc_mgmt_` values.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from './config.js';
import { ConfigError } from './config.js';
import { KeyRequestError, mintKey, type KeyRequest } from './core/auth/key-request.js';
import { hashKeyValue, keyPrefix, mintKeyValue } from './core/auth/key-token.js';
import type { ProjectRecord } from './core/records.js';
import { apiKeyWire, keyStatus, ROTATION_GRACE_MS } from './routes/management-keys.js';
import { createCatalog } from './store/catalog.js';
import { syncConfig } from './store/config-sync.js';
import { openDatabase, writeTransaction, type Db } from './store/db.js';
import { createKeysRepo, type KeysRepo } from './store/keys-repo.js';
import { createProjectsRepo } from './store/projects-repo.js';

export interface CliKeyRequest extends KeyRequest {
  readonly projectId: string;
}

export interface CliStore {
  readonly path: string;
  /** Where the path came from (`--db`, the config file's storage.path), for the error message. */
  readonly from: string;
}

export type WireKey = ReturnType<typeof apiKeyWire>;

/** Wire field (head of the path) -> the flag that set it. */
const FLAG_OF_FIELD: Record<string, string> = {
  allowed_ips: '--allowed-ips',
  blocked_ips: '--blocked-ips',
  expires_at: '--expires-at',
  endpoint_id: '--endpoint-id',
  allowed_workspace_ids: '--workspaces',
};

export function createKeyFromCli(config: Config | null, store: CliStore, r: CliKeyRequest) {
  return withStore(store, ['keys create', 'writes into'], (db) => {
    const now = Date.now();
    if (config) syncConfig(db, config, now);
    const catalog = createCatalog(db);
    catalog.close();
    const project = catalog.project(r.projectId);
    if (!project) throw new ConfigError(`--project: no project ${r.projectId} in ${store.path}`);
    let minted;
    try {
      minted = mintKey(r, { project, endpoints: catalog.endpoints(project.id), workspaces: catalog.workspaces(project.id), now }, { source: 'cli', valueSegment: project.slug });
    } catch (err) {
      if (!(err instanceof KeyRequestError)) throw err;
      const head = err.field.replace(/\[.*$/, '');
      throw new ConfigError(`${FLAG_OF_FIELD[head] ?? head}: ${err.message}`);
    }
    createKeysRepo(db).insert(minted.record, minted.hash);
    return { ...minted.record, value: minted.value };
  });
}

/** Every key of the project as the management API lists it (status, prefix, grace of a rotated-out value). */
export function listKeys(store: CliStore, projectId: string, now: number): WireKey[] {
  return withStore(store, ['keys list', 'reads'], (db) => {
    requireProject(db, projectId, store);
    const keys = createKeysRepo(db);
    const grace = keys.rotatedValuesValidUntil(projectId);
    return keys.listForProject(projectId).map((k) => apiKeyWire(k, now, grace.get(k.id) ?? null));
  });
}

/** Permanent; revoking a revoked key changes nothing (`changed: false`), as DELETE answers the same. */
export function revokeKey(store: CliStore, projectId: string, keyId: string, now: number): { key: WireKey; changed: boolean } {
  return withStore(store, ['keys revoke', 'writes into'], (db) => {
    const keys = createKeysRepo(db);
    findKey(db, keys, projectId, keyId, store);
    // Reason `cli`, like the API's `api`: a config sync brings back only keys it revoked itself.
    const changed = keys.revoke(keyId, now, 'cli');
    return { key: current(keys, projectId, keyId, now), changed };
  });
}

/** SPEC "API key" states: only an active key rotates; the new value is current, the old one works 24 h more. */
export function rotateKey(store: CliStore, projectId: string, keyId: string, now: number): { key: WireKey; value: string } {
  return withStore(store, ['keys rotate', 'writes into'], (db) => {
    const keys = createKeysRepo(db);
    // Checked and rotated under one write lock: a revocation by the running gateway cannot fall in between.
    const value = writeTransaction(db, () => {
      const { key, project } = findKey(db, keys, projectId, keyId, store);
      const status = keyStatus(key, now);
      if (status !== 'active') throw new ConfigError(`API key ${key.id} is ${status}; only an active key can be rotated`);
      const minted = mintKeyValue(project.slug);
      keys.rotate(key.id, hashKeyValue(minted), keyPrefix(minted), now, now + ROTATION_GRACE_MS);
      return minted;
    })();
    return { key: current(keys, projectId, keyId, now), value };
  });
}

function current(keys: KeysRepo, projectId: string, keyId: string, now: number): WireKey {
  const key = keys.findInProject(projectId, keyId);
  if (!key) throw new Error(`key ${keyId} vanished from project ${projectId}`);
  return apiKeyWire(key, now, keys.rotatedValuesValidUntil(projectId).get(key.id) ?? null);
}

function requireProject(db: Db, projectId: string, store: CliStore): ProjectRecord {
  const project = createProjectsRepo(db).listProjects().find((p) => p.id === projectId);
  if (!project) throw new ConfigError(`--project: no project ${projectId} in ${store.path}`);
  return project;
}

function findKey(db: Db, keys: KeysRepo, projectId: string, keyId: string, store: CliStore) {
  const project = requireProject(db, projectId, store);
  const key = keys.findInProject(projectId, keyId);
  if (!key) throw new ConfigError(`project ${projectId} has no API key ${JSON.stringify(keyId)} in ${store.path} (switchboard keys list shows its keys)`);
  return { key, project };
}

/** `what`: the command and what it does to the store, for the refusal ("keys list", "reads"). */
export function withStore<T>(store: CliStore, what: readonly [command: string, verb: string], use: (db: Db) => T): T {
  requireExistingStore(store, what);
  const db = openDatabase(store.path);
  try {
    return use(db);
  } finally {
    db.close();
  }
}

/**
 * The key goes into the store a gateway serves, so the store must already exist: a path that names no
 * file is a mistake (a typo, a relative path from another folder), and a key minted into a new, empty
 * database is one no gateway accepts, while the command used to exit 0 (issue 19, defect 9).
 */
function requireExistingStore(store: CliStore, [command, verb]: readonly [string, string]): void {
  if (store.path === ':memory:') {
    throw new ConfigError(`${store.from} is ":memory:", a store private to the gateway's process: ${command} cannot reach it`);
  }
  if (!existsSync(store.path)) {
    throw new ConfigError(
      `${store.from}: no database at ${resolve(store.path)}; ${command} ${verb} an existing store and never creates one ` +
        '(check the path, or start the gateway on it once)',
    );
  }
}
