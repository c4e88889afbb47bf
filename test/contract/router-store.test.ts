/**
 * The router store contract against both implementations: the embedded SQLite file (projects seeded, as
 * its tables reference them) and PostgreSQL (a fresh database per test), where writes also notify every
 * replica.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres, type PgStore } from '../../src/store/postgres/pg-store.js';
import { freshDatabase, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/processes.js';
import { pgRouterStore, sqliteRouterStore } from '../helpers/router-stores.js';
import { PROJECT_A, PROJECT_B, routerStoreContract, WORKSPACE_1, WORKSPACE_2, type WorkspaceRouting } from './router-store-contract.js';

interface RoutingRow {
  routing_mode: string | null;
  routing_mode_set_at: number | null;
  pinned_endpoint_id: string | null;
  default_workspace_id: string | null;
  default_workspace_set_at: number | null;
}

const ROUTING_OF = `SELECT w.routing_mode, w.routing_mode_set_at, w.pinned_endpoint_id, p.default_workspace_id, p.default_workspace_set_at
  FROM workspaces w JOIN projects p ON p.id = w.project_id`;

const routingOf = (r: RoutingRow | undefined): WorkspaceRouting => ({
  routingMode: r?.routing_mode ?? null,
  routingModeSetAt: r?.routing_mode_set_at ?? null,
  pinnedEndpointId: r?.pinned_endpoint_id ?? null,
  projectDefault: r?.default_workspace_id ?? null,
  projectDefaultSetAt: r?.default_workspace_set_at ?? null,
});

routerStoreContract('SQLite', async () => {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'store.db'));
  const seed = db.prepare(
    "INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, 'P', 'paid', 60, 0, 0, 0)",
  );
  for (const id of [PROJECT_A, PROJECT_B]) seed.run(id, `uuid-${id}`, id);
  const workspace = db.prepare("INSERT INTO workspaces (project_id, id, name, routing_mode_default, zero_data_retention, created_at) VALUES (?, ?, 'W', 'semantic', 0, 0)");
  for (const id of [WORKSPACE_1, WORKSPACE_2]) workspace.run(PROJECT_A, id);
  const routing = db.prepare<[string], RoutingRow>(`${ROUTING_OF} WHERE w.id = ?`);
  return {
    store: sqliteRouterStore(db),
    routing: async (workspaceId) => routingOf(routing.get(workspaceId)),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('PostgreSQL', () => {
  beforeAll(requirePostgres);

  let database: TestDatabase | null = null;
  const opened: PgStore[] = [];
  const open = async (url: string): Promise<PgStore> => {
    const pg = await openPostgres({ url, poolSize: 3 });
    opened.push(pg);
    return pg;
  };
  afterEach(async () => {
    for (const pg of opened.splice(0)) await pg.close();
    await database?.drop();
    database = null;
  });

  routerStoreContract('PostgreSQL', async () => {
    database = await freshDatabase();
    const pg = await open(database.url);
    // The catalog's rows the workspace routing fields live in (001-catalog).
    for (const id of [PROJECT_A, PROJECT_B]) {
      await pg.pool.query("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ($1, $2, $1, 'P', 'paid', 60, 0, 0, 0)", [id, `uuid-${id}`]);
    }
    for (const id of [WORKSPACE_1, WORKSPACE_2]) {
      await pg.pool.query("INSERT INTO workspaces (project_id, id, name, routing_mode_default, zero_data_retention, created_at) VALUES ($1, $2, 'W', 'semantic', 0, 0)", [PROJECT_A, id]);
    }
    return {
      store: pgRouterStore(pg),
      routing: async (workspaceId) => routingOf((await pg.pool.query<RoutingRow>(`${ROUTING_OF} WHERE w.id = $1`, [workspaceId])).rows[0]),
      close: async () => undefined,
    };
  });

  it('tells every replica, the writer too, that router state changed once a write commits', async () => {
    database = await freshDatabase();
    const [a, b] = await Promise.all([open(database.url), open(database.url)]);
    const storeA = pgRouterStore(a);
    const heard = { a: 0, b: 0 };
    storeA.onChange(() => (heard.a += 1));
    pgRouterStore(b).onChange(() => (heard.b += 1));
    await storeA.createAlias(PROJECT_A, 'fast', 'model-a', 1);
    await expect.poll(() => heard).toEqual({ a: 1, b: 1 });
    await storeA.putSlo(PROJECT_A, 'e1', { ttftMs: 1, tpotMs: null }, 2);
    await storeA.saveRouterState(PROJECT_A, { settings: {}, rules: [] }, 3);
    await expect.poll(() => heard).toEqual({ a: 3, b: 3 });
  });

  it("tells every replica's catalog when a workspace's routing fields change", async () => {
    database = await freshDatabase();
    const [a, b] = await Promise.all([open(database.url), open(database.url)]);
    let heard = 0;
    b.onChange('catalog', () => (heard += 1));
    await pgRouterStore(a).applyWorkspaceChange(PROJECT_A, WORKSPACE_1, { routingMode: 'concrete' }, 1);
    await expect.poll(() => heard).toBe(1);
  });
});
