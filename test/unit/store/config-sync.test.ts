import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createCatalog } from '../../../src/store/catalog.js';
import { syncConfig } from '../../../src/store/catalog/sqlite-catalog.js';
import { openDatabase } from '../../../src/store/db.js';

const KEY = `svc_demo_${randomBytes(32).toString('base64url')}`;

function config(endpointId: string, slug = 'chat') {
  return parseConfig({
    projects: [
      {
        id: 'proj_demo',
        slug: 'demo',
        workspaces: [{ id: 'ws_0a', name: 'Main' }],
        default_workspace: 'ws_0a',
        endpoints: [
          { id: endpointId, slug, name: 'Chat', kind: 'chat', tier: 'gpu', model: { id: 'm', context_window: 4096 }, upstream: { base_url: 'http://127.0.0.1:1/v1', model: 'm' } },
        ],
        keys: [{ value: KEY }],
      },
    ],
  });
}

const A = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
const B = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

describe('syncConfig', () => {
  it('is idempotent', () => {
    const db = openDatabase(':memory:');
    syncConfig(db, config(A), 1);
    const second = syncConfig(db, config(A), 2);
    expect(second).toMatchObject({ endpoints: 1, endpointsDeleted: 0, keys: 1, keysRevoked: 0 });
  });

  // Regression: the new row was upserted before the old one was marked deleted, so the live-slug unique
  // index refused the restart.
  it('accepts an endpoint re-declared under a new id with its old slug', () => {
    const db = openDatabase(':memory:');
    syncConfig(db, config(A), 1);
    expect(() => syncConfig(db, config(B), 2)).not.toThrow();
    const catalog = createCatalog(db);
    catalog.close();
    expect(catalog.endpoint('proj_demo', 'chat')?.id).toBe(B);
    expect(catalog.endpoints('proj_demo').map((e) => e.id)).toEqual([B]);
  });

  it('stamps the semantic routing default on new workspaces only', () => {
    const db = openDatabase(':memory:');
    syncConfig(db, config(A), 1);
    const catalog = createCatalog(db);
    catalog.close();
    expect(catalog.workspaces('proj_demo').get('ws_0a')).toMatchObject({ routingModeDefault: 'semantic', routingMode: null });
  });
});
