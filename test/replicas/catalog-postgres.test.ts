/**
 * Issue 12: two gateway processes, each with its own SQLite file, sharing the catalog through one
 * PostgreSQL database and nothing else (no Redis, no bus). A key created through A's management API
 * authenticates a chat turn on B within 1 s (B reloads its in-memory catalog on the change notice), is
 * refused on B within 1 s of its revocation on A, and a config-declared key works on both (both synced
 * the same file into the database at start). `switchboard keys` with that config writes into PostgreSQL,
 * where both replicas read keys, and refuses a SQLite file named by --db.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import pg from 'pg';
import { runCli, serveUntilExit, startReplica, startSimulatorProcess, tempDir, writeConfig, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let database: TestDatabase;
let keys: TestKeys;
let configPath: string;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, database] = await Promise.all([startSimulatorProcess(), freshDatabase()]);
  // One worker thread each: the gateways start faster.
  const config = { ...testConfig(sim.url, keys), storage: { kind: 'postgres', url: database.url }, pool: { min_threads: 1, max_threads: 1 } };
  configPath = writeConfig(tempDir(), config);
  // One after the other, as a shared machine starts them within its readiness timeout; both sync the same
  // file (syncs running at once are the contract suite's case).
  a = await startReplica(config, 'a', PG_GATEWAY_ENV);
  b = await startReplica(config, 'b', PG_GATEWAY_ENV);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), sim?.stop()]);
  await database?.drop();
});

const chatOn = async (replica: GatewayProcess, key: string): Promise<number> =>
  (await call(`${replica.url}/${PROJECT}/chat/v1/chat/completions`, { key, body: { model: 'client-model', messages: [{ role: 'user', content: 'hello' }] } })).status;

const errorCode = async (replica: GatewayProcess, key: string): Promise<unknown> =>
  ((await call(`${replica.url}/${PROJECT}/v1/models`, { key })).body as { error?: { code?: string } }).error?.code;

describe('two replicas sharing the catalog in PostgreSQL, without Redis', () => {
  it('accepts a config-declared key on both, stored once', async () => {
    expect(await chatOn(a, keys.full)).toBe(200);
    expect(await chatOn(b, keys.full)).toBe(200);
    const listed = await call(`${b.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full });
    const data = (listed.body as { data: { source: string }[] }).data;
    expect(data.filter((k) => k.source === 'config')).toHaveLength(10);
  });

  it('authenticates a key created on A on B within 1 s, and refuses it there within 1 s of its revocation on A', async () => {
    const created = await call(`${a.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
    expect(created.status).toBe(201);
    const { id, value } = created.body as { id: string; value: string };
    // A awaited its own reload before answering: its very next request sees the key.
    expect(await chatOn(a, value)).toBe(200);
    // B at the first try too, before its catalog notice has arrived: it asks PostgreSQL of a key it does not hold.
    expect(await chatOn(b, value)).toBe(200);
    for (let i = 0; i < 10; i += 1) {
      const next = await call(`${a.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
      expect(await chatOn(b, (next.body as { value: string }).value)).toBe(200);
    }

    const revoked = await call(`${a.url}/${PROJECT}/v1/management/api-keys/${id}`, { method: 'DELETE', key: keys.full });
    expect(revoked.status).toBe(200);
    expect(await chatOn(a, value)).toBe(401);
    await expect.poll(() => chatOn(b, value), { timeout: 1000, interval: 20 }).toBe(401);
    // The same answer as with SQLite: the key is known and revoked, not unknown.
    expect(await errorCode(b, value)).toBe('key_revoked');
  });

  it('rotates on B: the new value works on A within 1 s, the old one still works in its grace', async () => {
    const created = await call(`${a.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
    const { id, value } = created.body as { id: string; value: string };
    const rotated = await call(`${b.url}/${PROJECT}/v1/management/api-keys/${id}/rotate`, { method: 'POST', key: keys.full });
    expect(rotated.status).toBe(200);
    const next = (rotated.body as { value: string }).value;
    await expect.poll(() => chatOn(a, next), { timeout: 1000, interval: 20 }).toBe(200);
    expect(await chatOn(a, value)).toBe(200);
  });

  it('lets switchboard keys create a key in PostgreSQL that both replicas accept, and refuses --db there', async () => {
    const made = await runCli(['keys', 'create', '--config', configPath, '--project', PROJECT, '--scopes', 'inference'], PG_GATEWAY_ENV);
    expect(made.code, made.stderr).toBe(0);
    const value = made.stdout.trim();
    // At once on both ("a running gateway accepts it at once"), whether or not their notice has arrived.
    expect(await chatOn(b, value)).toBe(200);
    expect(await chatOn(a, value)).toBe(200);

    const refused = await runCli(['keys', 'list', '--config', configPath, '--project', PROJECT, '--db', `${tempDir()}/other.db`], PG_GATEWAY_ENV);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/PostgreSQL/);
  });

  it('leaves the shared catalog as it was when a start fails to listen (it synced its file first)', async () => {
    const config = { ...testConfig(sim.url, keys), storage: { kind: 'postgres', url: database.url }, pool: { min_threads: 1, max_threads: 1 } };
    const [project] = config.projects;
    const ghost = { ...project?.endpoints[0], id: '7d0b6f0e-3c1a-4f55-9a43-0c6f4d1e9a01', slug: 'ghost', name: 'Ghost' };
    const path = writeConfig(tempDir(), { ...config, projects: [{ ...project, endpoints: [...(project?.endpoints ?? []), ghost] }] });
    // A's port: the start must fail to listen, and before anything shared changed.
    const run = await serveUntilExit(['--config', path, '--port', new URL(a.url).port, '--db', `${tempDir()}/ghost.db`], PG_GATEWAY_ENV);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toMatch(/cannot listen on 127\.0\.0\.1:\d+/);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      expect((await client.query("SELECT count(*)::int AS n FROM endpoints WHERE slug = 'ghost'")).rows[0]).toEqual({ n: 0 });
    } finally {
      await client.end();
    }
  });
});
