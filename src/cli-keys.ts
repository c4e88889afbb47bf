/**
 * `switchboard keys create`: mints a key straight into the store, like the dashboard would (value
 * `svc_<project slug>_<token>`, no user). With --config the file is synced first so the project exists.
 * The rules are the management API's (core/auth/key-request.ts); only the error wording names flags.
 */
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

/** Wire field (head of the path) -> the flag that set it. */
const FLAG_OF_FIELD: Record<string, string> = {
  allowed_ips: '--allowed-ips',
  blocked_ips: '--blocked-ips',
  expires_at: '--expires-at',
  endpoint_id: '--endpoint-id',
  allowed_workspace_ids: '--workspaces',
};

export function createKeyFromCli(config: Config | null, dbPath: string, r: CliKeyRequest) {
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
