/**
 * What `switchboard keys` does to the store: mint (with --config the file is synced first so the project
 * exists), list, revoke, rotate. Each opens the store the gateways read keys from, through the catalog
 * port: PostgreSQL when the config's storage.kind is postgres (each write notifies the running replicas),
 * else an existing SQLite file, never a new one; and closes it. Revoke and
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
import type { ApiKeyRecord, ProjectRecord, WorkspaceRecord } from './core/records.js';
import type { CatalogStore } from './core/store/catalog-store.js';
import { apiKeyWire, keyStatus, ROTATION_GRACE_MS } from './routes/management-keys.js';
import { openDatabase, type Db } from './store/db.js';
import { createCatalogStore } from './store/catalog/catalog-store.js';
import { createPostgresRunner } from './store/sql/postgres-runner.js';
import { createSqliteRunner } from './store/sql/sqlite-runner.js';
import { withCliPostgres } from './cli-postgres.js';

export interface CliKeyRequest extends KeyRequest {
  readonly projectId: string;
}

export interface CliStore {
  readonly path: string;
  /** Where the path came from (`--db`, the config file's storage.path), for the error message. */
  readonly from: string;
  /** The config's storage.kind is postgres: keys live there, not in `path`. */
  readonly postgres?: { readonly url: string; readonly from: string } | undefined;
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

/** The open catalog store and how to name it in a message (a file path, or PostgreSQL's redacted URL). */
interface OpenStore {
  readonly keys: CatalogStore;
  readonly where: string;
}

export function createKeyFromCli(config: Config | null, store: CliStore, r: CliKeyRequest) {
  return withCatalogStore(store, ['keys create', 'writes into'], async ({ keys, where }) => {
    const now = Date.now();
    if (config) await keys.syncConfig(config, now);
    const { projects, endpoints, workspaces } = await keys.loadSnapshot();
    const project = projects.find((p) => p.id === r.projectId || p.uuid === r.projectId);
    if (!project) throw new ConfigError(`--project: no project ${r.projectId} in ${where}`);
    const context = {
      project,
      endpoints: endpoints.filter((e) => e.projectId === project.id),
      workspaces: new Map(workspaces.filter((w) => w.projectId === project.id).map((w): [string, WorkspaceRecord] => [w.id, w])),
      now,
    };
    let minted;
    try {
      minted = mintKey(r, context, { source: 'cli', valueSegment: project.slug });
    } catch (err) {
      if (!(err instanceof KeyRequestError)) throw err;
      const head = err.field.replace(/\[.*$/, '');
      throw new ConfigError(`${FLAG_OF_FIELD[head] ?? head}: ${err.message}`);
    }
    await keys.insert(minted.record, minted.hash);
    return { ...minted.record, value: minted.value };
  });
}

/** Every key of the project as the management API lists it (status, prefix, grace of a rotated-out value). */
export function listKeys(store: CliStore, projectId: string, now: number): Promise<WireKey[]> {
  return withCatalogStore(store, ['keys list', 'reads'], async (open) => {
    await requireProject(open, projectId);
    const [grace, listed] = await Promise.all([open.keys.rotatedValuesValidUntil(projectId), open.keys.listForProject(projectId)]);
    return listed.map((k) => apiKeyWire(k, now, grace.get(k.id) ?? null));
  });
}

/** Permanent; revoking a revoked key changes nothing (`changed: false`), as DELETE answers the same. */
export function revokeKey(store: CliStore, projectId: string, keyId: string, now: number): Promise<{ key: WireKey; changed: boolean }> {
  return withCatalogStore(store, ['keys revoke', 'writes into'], async (open) => {
    await findKey(open, projectId, keyId);
    // Reason `cli`, like the API's `api`: a config sync brings back only keys it revoked itself.
    const changed = await open.keys.revoke(keyId, now, 'cli');
    return { key: await current(open.keys, projectId, keyId, now), changed };
  });
}

/** SPEC "API key" states: only an active key rotates; the new value is current, the old one works 24 h more. */
export function rotateKey(store: CliStore, projectId: string, keyId: string, now: number): Promise<{ key: WireKey; value: string }> {
  return withCatalogStore(store, ['keys rotate', 'writes into'], async (open) => {
    const { key, project } = await findKey(open, projectId, keyId);
    refuseInactive(key, now);
    const value = mintKeyValue(project.slug);
    // The store checks again in the rotation's transaction: a revocation by a running gateway cannot fall in between.
    if (!(await open.keys.rotate({ id: key.id, hash: hashKeyValue(value), prefix: keyPrefix(value), now, graceUntil: now + ROTATION_GRACE_MS }))) {
      refuseInactive((await findKey(open, projectId, keyId)).key, now);
    }
    return { key: await current(open.keys, projectId, keyId, now), value };
  });
}

function refuseInactive(key: ApiKeyRecord, now: number): void {
  const status = keyStatus(key, now);
  if (status !== 'active') throw new ConfigError(`API key ${key.id} is ${status}; only an active key can be rotated`);
}

async function current(keys: CatalogStore, projectId: string, keyId: string, now: number): Promise<WireKey> {
  const key = await keys.findInProject(projectId, keyId);
  if (!key) throw new Error(`key ${keyId} vanished from project ${projectId}`);
  return apiKeyWire(key, now, (await keys.rotatedValuesValidUntil(projectId)).get(key.id) ?? null);
}

async function requireProject({ keys, where }: OpenStore, projectId: string): Promise<ProjectRecord> {
  const project = (await keys.loadSnapshot()).projects.find((p) => p.id === projectId);
  if (!project) throw new ConfigError(`--project: no project ${projectId} in ${where}`);
  return project;
}

async function findKey(open: OpenStore, projectId: string, keyId: string) {
  const project = await requireProject(open, projectId);
  const key = await open.keys.findInProject(projectId, keyId);
  if (!key) throw new ConfigError(`project ${projectId} has no API key ${JSON.stringify(keyId)} in ${open.where} (switchboard keys list shows its keys)`);
  return { key, project };
}

/**
 * The store the gateways read keys from. With storage.kind postgres a SQLite file named by --db is refused:
 * a key written there would never authenticate, and the command would still exit 0.
 */
async function withCatalogStore<T>(store: CliStore, what: readonly [command: string, verb: string], use: (open: OpenStore) => Promise<T>): Promise<T> {
  if (!store.postgres) {
    requireExistingStore(store, what);
    const db = openDatabase(store.path);
    try {
      return await use({ keys: createCatalogStore(createSqliteRunner(db)), where: store.path });
    } finally {
      db.close();
    }
  }
  return withCliPostgres(store.postgres, store.from === '--db', 'API keys', what, (pg, where) => use({ keys: createCatalogStore(createPostgresRunner(pg)), where }));
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
