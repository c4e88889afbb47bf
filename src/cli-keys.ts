/**
 * `switchboard keys create`: mints a key straight into the store, like the dashboard would (value
 * `svc_<project slug>_<token>`, no user). With --config the file is synced first so the project exists.
 */
import type { Config, Scope } from './config.js';
import { ConfigError } from './config.js';
import { compileIpFilter, parseRange } from './core/auth/ip-filter.js';
import { hashKeyValue, keyPrefix, mintKeyValue } from './core/auth/key-token.js';
import { createCatalog } from './store/catalog.js';
import { newKeyId, syncConfig } from './store/config-sync.js';
import { openDatabase } from './store/db.js';
import { createKeysRepo } from './store/keys-repo.js';

export interface CliKeyRequest {
  projectId: string;
  scopes: Scope[];
  name: string | null;
  expiresAt: number | null;
  endpointId: string | null;
  allowedWorkspaceIds: string[] | null;
  allowedIps: string[];
  blockedIps: string[];
  quotaRequests: number;
  quotaWindow: number;
}

export function createKeyFromCli(config: Config | null, dbPath: string, r: CliKeyRequest) {
  const db = openDatabase(dbPath);
  try {
    if (config) syncConfig(db, config, Date.now());
    const catalog = createCatalog(db);
    catalog.close();
    const project = catalog.project(r.projectId);
    if (!project) throw new ConfigError(`--project: no project ${r.projectId} in ${dbPath}`);
    const bad = [...r.allowedIps, ...r.blockedIps].find((ip) => parseRange(ip) === null);
    if (bad) throw new ConfigError(`--allowed-ips/--blocked-ips: ${bad} is not an IPv4/IPv6 address or CIDR range`);
    if (r.endpointId && !catalog.endpoints(project.id).some((e) => e.id === r.endpointId)) {
      throw new ConfigError(`--endpoint-id: project ${project.id} has no endpoint ${r.endpointId}`);
    }
    if (r.allowedWorkspaceIds) {
      if (r.scopes.includes('management')) throw new ConfigError('--workspaces: cannot be combined with the management scope');
      const live = catalog.workspaces(project.id);
      const unknown = r.allowedWorkspaceIds.find((w) => !live.has(w));
      if (unknown) throw new ConfigError(`--workspaces: project ${project.id} has no workspace ${unknown}`);
    }
    const value = mintKeyValue(project.slug);
    const key = {
      id: newKeyId(),
      projectId: project.id,
      name: r.name,
      prefix: keyPrefix(value),
      scopes: r.scopes,
      allowedIps: r.allowedIps,
      blockedIps: r.blockedIps,
      expiresAt: r.expiresAt,
      quotaRequests: r.quotaRequests,
      quotaWindow: r.quotaWindow,
      endpointId: r.endpointId,
      allowedWorkspaceIds: r.allowedWorkspaceIds,
      userId: null,
      source: 'cli' as const,
      createdAt: Date.now(),
    };
    compileIpFilter(key.allowedIps, key.blockedIps);
    createKeysRepo(db).insert(key, hashKeyValue(value));
    return { ...key, value };
  } finally {
    db.close();
  }
}
