import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { CHAT_ID, makeKeys, PROJECT, testConfig, type TestConfig, type TestEndpoint, type TestKeys } from '../helpers/configs.js';
import { call, expectError } from '../helpers/http.js';
import {
  runCli,
  startGatewayProcess,
  startSimulatorProcess,
  tempDir,
  writeConfig,
  type SimulatorProcess,
} from '../helpers/processes.js';

let sim: SimulatorProcess;
let keys: TestKeys;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
});

afterAll(async () => {
  await sim?.stop();
});

function expectUsageFailure(result: { code: number | null; stderr: string }, mentions: string): void {
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(mentions);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe('bad flags and bad config files exit with code 2 and name the problem', () => {
  it.each([
    [['bogus'], 'unknown command'],
    [['serve'], '--config'],
    [['serve', '--config', 'x.yaml', '--port', 'http'], '--port'],
    [['serve', '--config', 'x.yaml', '--verbose'], "'--verbose'"],
    [['keys', 'create', '--project', PROJECT, '--db', '/tmp/x.db', '--scopes', 'root'], '--scopes'],
    [['keys', 'create', '--project', PROJECT, '--scopes', 'inference'], '--config or --db'],
  ])('switchboard %j', async (args, mentions) => {
    expectUsageFailure(await runCli(args), mentions);
  });

  it('names the field path of an invalid config value', async () => {
    const config = testConfig(sim.url, keys);
    (config.projects[0]?.endpoints[0] as { kind: string }).kind = 'gpu-chat';
    const path = writeConfig(tempDir(), config);
    const result = await runCli(['serve', '--config', path]);
    expectUsageFailure(result, 'projects[0].endpoints[0].kind');
  });

  /** PROJECT's chat endpoint under another slug, its id kept. */
  const chatAgain = (c: TestConfig): TestEndpoint => {
    const chat = c.projects[0].endpoints.find((e) => e.id === CHAT_ID);
    if (!chat) throw new Error('the test config has no chat endpoint');
    return { ...chat, slug: 'again' };
  };

  // Regression: a value repeated inside one project was named by the project's check and again by the
  // check across projects, so the same line was printed twice. Each edit returns the field it repeated.
  it.each<[string, (c: TestConfig) => string]>([
    ['a key value twice in one project', (c) => `projects[0].keys[${c.projects[0].keys.push({ value: keys.full, scopes: ['inference'] }) - 1}].value`],
    ['an endpoint id twice in one project', (c) => `projects[0].endpoints[${c.projects[0].endpoints.push(chatAgain(c)) - 1}].id`],
    ['a key value in two projects', (c) => `projects[1].keys[${c.projects[1].keys.push({ value: keys.full, scopes: ['inference'] }) - 1}].value`],
  ])('names %s once', async (_name, repeat) => {
    const config = testConfig(sim.url, keys);
    const line = `${repeat(config)}: is a duplicate`;
    const result = await runCli(['serve', '--config', writeConfig(tempDir(), config)]);
    expectUsageFailure(result, line);
    expect(result.stderr.split('\n').filter((l) => l.includes('is a duplicate'))).toEqual([line]);
  });

  it('reports unreadable and unparsable files', async () => {
    expectUsageFailure(await runCli(['serve', '--config', '/nonexistent/switchboard.yaml']), 'cannot read config file');
    const broken = join(tempDir(), 'broken.yaml');
    writeFileSync(broken, 'server: { port: [1, 2\n');
    expectUsageFailure(await runCli(['serve', '--config', broken]), 'not valid YAML');
  });

  // Regression: pino threw on an unknown level and serve exited 1 with `default level:verbose must be
  // included in custom levels`, so the systemd unit (RestartPreventExitStatus=2) restarted it in a loop.
  it.each([[[]], [['--workers', '2']]])('refuses a SWITCHBOARD_LOG_LEVEL that is no log level, naming it and the levels (serve %j)', async (extra) => {
    const path = writeConfig(tempDir(), testConfig(sim.url, keys));
    const result = await runCli(['serve', '--config', path, '--port', '0', ...extra], { SWITCHBOARD_LOG_LEVEL: 'verbose' });
    expectUsageFailure(result, 'SWITCHBOARD_LOG_LEVEL: "verbose" is not a log level: use one of fatal, error, warn, info, debug, trace, silent');
    expect(result.stdout).toBe('');
  });

  it('refuses a SWITCHBOARD_SECRET_KEY that is not 32 base64-encoded bytes, naming it', async () => {
    const path = writeConfig(tempDir(), testConfig(sim.url, keys));
    expectUsageFailure(await runCli(['serve', '--config', path, '--port', '0'], { SWITCHBOARD_SECRET_KEY: 'c2hvcnQ=' }), 'SWITCHBOARD_SECRET_KEY must hold 32 bytes, base64-encoded');
  });

  it.each(['', 'DEBUG'])('starts with SWITCHBOARD_LOG_LEVEL=%j (empty is unset; case is ignored)', async (level) => {
    const gw = await startGatewayProcess(testConfig(sim.url, keys), { env: { SWITCHBOARD_LOG_LEVEL: level } });
    expect(await gw.stop()).toBe(0);
  });

  it('refuses to start on the pure-JS uWebSockets.js fallback unless the operator allows it', async () => {
    const path = writeConfig(tempDir(), testConfig(sim.url, keys));
    const result = await runCli(['serve', '--config', path, '--port', '0'], { UWS_USE_FALLBACK: '1' });
    expectUsageFailure(result, 'pure-JS fallback');
  });
});

describe('switchboard keys create', () => {
  it('mints a key that a running gateway accepts at once, and prints it once', async () => {
    const gw = await startGatewayProcess(testConfig(sim.url, keys));
    try {
      const result = await runCli(['keys', 'create', '--project', PROJECT, '--scopes', 'inference', '--db', gw.dbPath]);
      expect(result.code).toBe(0);
      const value = result.stdout.trim();
      expect(value).toMatch(/^svc_test_[A-Za-z0-9_-]{43}$/);
      expect(result.stderr).not.toContain(value);
      expect((await call(`${gw.url}/${PROJECT}/v1/models`, { key: value })).status).toBe(200);
      expectError(await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: value }), 403, 'scope_insufficient');
    } finally {
      await gw.stop();
    }
  });

  it('refuses a workspace list combined with the management scope', async () => {
    // keys create writes only into a store that exists (it never creates one).
    const db = join(tempDir(), 'k.db');
    openDatabase(db).close();
    const path = writeConfig(tempDir(), { ...testConfig(sim.url, keys), storage: { path: db } });
    const result = await runCli(['keys', 'create', '--config', path, '--project', PROJECT, '--scopes', 'management', '--workspaces', 'ws_0b0b0b']);
    expectUsageFailure(result, '--workspaces');
  });
});

describe('state across restarts', () => {
  it('keeps CLI-minted keys, marks removed endpoints deleted and revokes removed bootstrap keys', async () => {
    const dir = tempDir();
    const config = testConfig(sim.url, keys);
    const first = await startGatewayProcess(config, { dir });
    const minted = (await runCli(['keys', 'create', '--project', PROJECT, '--scopes', 'inference', '--db', first.dbPath])).stdout.trim();
    expect(await first.stop()).toBe(0);

    const project = config.projects[0];
    if (!project) throw new Error('test config has no project');
    const trimmed = {
      ...config,
      projects: [{ ...project, endpoints: project.endpoints.filter((e) => e.slug !== 'paused'), keys: project.keys.filter((k) => k.value !== keys.inferenceOnly) }, ...config.projects.slice(1)],
    };
    const second = await startGatewayProcess(trimmed, { dir, dbPath: first.dbPath });
    try {
      expect((await call(`${second.url}/${PROJECT}/v1/models`, { key: minted })).status).toBe(200);
      const endpoints = (await call(`${second.url}/${PROJECT}/v1/endpoints`, { key: keys.full })).body as { data: { slug: string }[] };
      expect(endpoints.data.map((e) => e.slug)).not.toContain('paused');
      expectError(await call(`${second.url}/${PROJECT}/paused/v1/models`, { key: keys.full }), 404, 'endpoint_not_found');
      expectError(await call(`${second.url}/${PROJECT}/v1/models`, { key: keys.inferenceOnly }), 401, 'key_revoked');
    } finally {
      await second.stop();
    }

    const third = await startGatewayProcess(config, { dir, dbPath: first.dbPath });
    try {
      expect((await call(`${third.url}/${PROJECT}/v1/models`, { key: keys.inferenceOnly })).status).toBe(200);
      expect((await call(`${third.url}/${PROJECT}/paused/v1/models`, { key: keys.full })).status).toBe(200);
    } finally {
      await third.stop();
    }
  });

  it('exits 0 on SIGTERM and closes SQLite cleanly (the WAL is checkpointed away)', async () => {
    const gw = await startGatewayProcess(testConfig(sim.url, keys));
    expect((await call(`${gw.url}/healthz`)).status).toBe(200);
    expect(await gw.stop('SIGTERM')).toBe(0);
    expect(existsSync(gw.dbPath)).toBe(true);
    expect(existsSync(`${gw.dbPath}-wal`)).toBe(false);
    expect(gw.stdout.join('')).toContain('"msg":"stopped"');
  });

  it('exits 0 on SIGINT too', async () => {
    const gw = await startGatewayProcess(testConfig(sim.url, keys));
    expect(await gw.stop('SIGINT')).toBe(0);
  });
});
