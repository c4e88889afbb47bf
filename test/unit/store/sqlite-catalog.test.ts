/**
 * The synchronous SQLite face of the catalog store (store/catalog/sqlite-catalog.ts): the same programs as
 * the port, so it must answer as the port does; its key lookup (the request path) runs the port's
 * compiled query without driving a program.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { hashKeyValue, keyPrefix } from '../../../src/core/auth/key-token.js';
import { createCatalogStore } from '../../../src/store/catalog/catalog-store.js';
import { createSqliteCatalog } from '../../../src/store/catalog/sqlite-catalog.js';
import { openDatabase } from '../../../src/store/db.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';

const value = (): string => `svc_demo_${randomBytes(32).toString('base64url')}`;
const DECLARED = value();
const CONFIG = parseConfig({
  projects: [{ id: 'proj_demo', slug: 'demo', workspaces: [{ id: 'ws_0a', name: 'Main' }], default_workspace: 'ws_0a', keys: [{ value: DECLARED, name: 'declared' }] }],
});

function stores() {
  const db = openDatabase(':memory:');
  return { sync: createSqliteCatalog(db), port: createCatalogStore(createSqliteRunner(db)) };
}

describe('the SQLite catalog, synchronously', () => {
  it('finds a credential as the port finds it, and nothing for an unknown value', async () => {
    const { sync, port } = stores();
    expect(sync.syncConfig(CONFIG, 1)).toEqual({ projects: 1, endpoints: 0, endpointsDeleted: 0, keys: 1, keysRevoked: 0 });
    const hash = hashKeyValue(DECLARED);
    const found = sync.findCredential(hash);
    expect(found?.key).toMatchObject({ projectId: 'proj_demo', name: 'declared', source: 'config', prefix: keyPrefix(DECLARED), revokedAt: null });
    expect(found).toEqual(await port.findCredential(hash));
    expect(sync.findCredential(hashKeyValue(value()))).toBeNull();
  });

  it('reads the projects and live workspaces the port snapshots, without credentials', async () => {
    const { sync, port } = stores();
    sync.syncConfig(CONFIG, 1);
    const snapshot = await port.loadSnapshot();
    expect(snapshot.credentials).toBeNull();
    expect(sync.snapshot()).toMatchObject({ projects: snapshot.projects, workspaces: snapshot.workspaces, endpoints: snapshot.endpoints });
  });

  it('rotates an active key only: a revoked one is refused, its values unchanged', () => {
    const { sync } = stores();
    sync.syncConfig(CONFIG, 1);
    const key = sync.findCredential(hashKeyValue(DECLARED))?.key;
    if (!key) throw new Error('the declared key was not synced');
    const next = value();
    expect(sync.revoke(key.id, 2, 'api')).toBe(true);
    expect(sync.rotate({ id: key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: 3, graceUntil: 4 })).toBe(false);
    expect(sync.findCredential(hashKeyValue(next))).toBeNull();
    expect(sync.findInProject('proj_demo', key.id)?.prefix).toBe(keyPrefix(DECLARED));
  });
});
