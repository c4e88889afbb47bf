/**
 * `switchboard keys create`: mints a key straight into the store, like the dashboard would (value
 * `svc_<project slug>_<token>`, no user). With --config the file is synced first so the project exists.
 * The rules are the management API's (core/auth/key-request.ts); only the error wording names flags.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from './config.js';
import { ConfigError } from './config.js';
import { KeyRequestError, mintKey, type KeyRequest } from './core/auth/key-request.js';
import { createCatalog } from './store/catalog.js';
import { syncConfig } from './store/config-sync.js';
import { openDatabase } from './store/db.js';
import { createKeysRepo } from './store/keys-repo.js';

export interface CliKeyRequest extends KeyRequest {
  readonly projectId: string;
}

export interface CliStore {
  readonly path: string;
  /** Where the path came from (`--db`, the config file's storage.path), for the error message. */
  readonly from: string;
}

/** Wire field (head of the path) -> the flag that set it. */
const FLAG_OF_FIELD: Record<string, string> = {
  allowed_ips: '--allowed-ips',
  blocked_ips: '--blocked-ips',
  expires_at: '--expires-at',
  endpoint_id: '--endpoint-id',
  allowed_workspace_ids: '--workspaces',
};

export function createKeyFromCli(config: Config | null, store: CliStore, r: CliKeyRequest) {
  requireExistingStore(store);
  const dbPath = store.path;
  const db = openDatabase(dbPath);
  try {
    const now = Date.now();
    if (config) syncConfig(db, config, now);
    const catalog = createCatalog(db);
    catalog.close();
    const project = catalog.project(r.projectId);
    if (!project) throw new ConfigError(`--project: no project ${r.projectId} in ${dbPath}`);
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
  } finally {
    db.close();
  }
}

/**
 * The key goes into the store a gateway serves, so the store must already exist: a path that names no
 * file is a mistake (a typo, a relative path from another folder), and a key minted into a new, empty
 * database is one no gateway accepts, while the command used to exit 0 (issue 19, defect 9).
 */
function requireExistingStore(store: CliStore): void {
  if (store.path === ':memory:') {
    throw new ConfigError(`${store.from} is ":memory:", a store private to the gateway's process: keys create cannot write into it`);
  }
  if (!existsSync(store.path)) {
    throw new ConfigError(
      `${store.from}: no database at ${resolve(store.path)}; keys create writes into an existing store and never creates one ` +
        '(check the path, or start the gateway on it once)',
    );
  }
}
