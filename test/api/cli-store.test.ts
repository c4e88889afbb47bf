/**
 * Which store the CLI opens, and with which key (issue 19, defects 8 and 9), through the real CLI:
 * relative storage paths are from the config file's folder, `keys create` never creates a store, and
 * `serve` refuses a store whose encrypted values its key cannot open.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { exitReport, runCli, serveUntilExit, startGatewayProcess, startSimulatorProcess, tempDir, writeConfig, type SimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject, type RouterKeys } from '../helpers/router-config.js';

let sim: SimulatorProcess;
let keys: TestKeys;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
});

afterAll(async () => {
  await sim?.stop();
});

const createKey = (args: string[], cwd?: string) => runCli(['keys', 'create', '--project', PROJECT, '--scopes', 'inference', ...args], {}, cwd);

// Regression: `keys create --config FILE` from another folder took storage.path from the working
// directory, minted into a new, empty database, exited 0, and the running gateway rejected the key.
describe('storage.path in a config file', () => {
  it('is taken from the config file folder by serve and keys create, whatever the working directory', async () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    const gw = await startGatewayProcess({ ...testConfig(sim.url, keys), storage: { path: 'state/gw.db' } }, { dir, dbPath: null, cwd: elsewhere });
    try {
      expect(gw.dbPath).toBe(join(dir, 'state', 'gw.db'));
      const result = await createKey(['--config', gw.configPath], tempDir());
      expect(result.code).toBe(0);
      expect((await call(`${gw.url}/${PROJECT}/v1/models`, { key: result.stdout.trim() })).status).toBe(200);
      expect(existsSync(join(elsewhere, 'state'))).toBe(false);
    } finally {
      await gw.stop();
    }
  });

  it('keeps --db on the command line relative to the working directory', async () => {
    const dir = tempDir();
    const gw = await startGatewayProcess(testConfig(sim.url, keys), { dbPath: 'here.db', cwd: dir });
    try {
      const result = await createKey(['--db', 'here.db'], dir);
      expect(result.code).toBe(0);
      expect((await call(`${gw.url}/${PROJECT}/v1/models`, { key: result.stdout.trim() })).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });
});

describe('keys create on a store that does not exist', () => {
  it('exits 2 naming the resolved storage.path, and creates nothing', async () => {
    const dir = tempDir();
    const config = writeConfig(dir, { ...testConfig(sim.url, keys), storage: { path: 'missing/gw.db' } });
    const result = await createKey(['--config', config], tempDir());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`storage.path in ${config}: no database at ${join(dir, 'missing', 'gw.db')}`);
    expect(result.stdout).toBe('');
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });

  it('exits 2 for a --db path that names no file, and creates nothing', async () => {
    const db = join(tempDir(), 'typo.db');
    const result = await createKey(['--db', db]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--db: no database at ${db}`);
    expect(existsSync(db)).toBe(false);
  });
});

// Regression: a store restored without its `<db>.key` got a new key at start, and every router decision
// excerpt (sealed with the old key) read back empty, with nothing logged.
describe('a store whose encrypted values its key cannot open', () => {
  let routerKeys: RouterKeys;
  let config: ReturnType<typeof testConfig>;
  let configPath: string;
  let dbPath: string;
  let keyText: string;
  let decisionId: string;

  beforeAll(async () => {
    routerKeys = makeRouterKeys();
    config = testConfig(sim.url, keys, { extraProjects: [routerProject(sim.url, routerKeys)] });
    const gw = await startGatewayProcess(config);
    try {
      const routed = await call(`${gw.url}/${ROUTER_PROJECT}/_semantic/router/v1/chat/completions`, {
        key: routerKeys.full,
        body: { model: 'm', messages: [{ role: 'user', content: 'compute the derivative of sin x' }] },
      });
      expect(routed.status).toBe(200);
      decisionId = routed.headers.get('x-request-id') ?? '';
    } finally {
      // Stopping flushes the decision writer: the sealed excerpt is in the store once this returns.
      const status = await gw.stop();
      expect(status, exitReport(gw, status)).toBe(0);
    }
    ({ configPath, dbPath } = gw);
    keyText = readFileSync(`${dbPath}.key`, 'utf8');
  });

  const serve = (env: NodeJS.ProcessEnv = {}) => serveUntilExit(['--config', configPath, '--db', dbPath], env);

  it('refuses to start without its key file, naming the file, and does not create a new one', async () => {
    renameSync(`${dbPath}.key`, `${dbPath}.key.away`);
    try {
      const result = await serve();
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`the key file ${dbPath}.key is missing`);
      expect(result.stdout).not.toContain('switchboard listening');
      expect(existsSync(`${dbPath}.key`)).toBe(false);
    } finally {
      renameSync(`${dbPath}.key.away`, `${dbPath}.key`);
    }
  });

  it('refuses to start with another key in the key file', async () => {
    writeFileSync(`${dbPath}.key`, `${randomBytes(32).toString('base64')}\n`);
    try {
      const result = await serve();
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${dbPath}.key is not the key`);
      expect(result.stdout).not.toContain('switchboard listening');
    } finally {
      writeFileSync(`${dbPath}.key`, keyText);
    }
  });

  it('refuses to start with a SWITCHBOARD_SECRET_KEY that does not open them', async () => {
    const result = await serve({ SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64') });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('SWITCHBOARD_SECRET_KEY is not the key');
  });

  it('starts with its own key and reads the excerpt back', async () => {
    const gw = await startGatewayProcess(config, { dbPath });
    try {
      const res = await call(`${gw.url}/${ROUTER_PROJECT}/v1/management/semantic-router/decisions`, { key: routerKeys.full });
      const rows = (res.body as { data: { decision_request_id: string; query_preview: string }[] }).data;
      expect(rows.find((r) => r.decision_request_id === decisionId)?.query_preview).toContain('derivative');
    } finally {
      await gw.stop();
    }
  });
});

describe('a store migrated by a newer build', () => {
  it('makes serve refuse to start with exit code 2 and a message naming both versions', async () => {
    const dir = tempDir();
    const db = new Database(`${dir}/future.db`);
    db.pragma('user_version = 999');
    db.close();
    const res = await runCli(['serve', '--config', writeConfig(dir, testConfig('http://127.0.0.1:9/v1', makeKeys())), '--port', '0', '--db', `${dir}/future.db`]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/version 999\) is newer than this build/);
  });
});
