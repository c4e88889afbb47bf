/**
 * A store made by the build before storage was defined once (issue 33: commit 2fcee44, the fixture in
 * test/fixtures/earlier-store, made by its make-fixture.mjs with that build's CLI) opens under this build,
 * on SQLite (the file as the stopped gateway left it, with its files folder) and on PostgreSQL (that
 * build's database, dumped and loaded into a fresh one): every key, the usage ledger, a stored Response and
 * a conversation, files' bytes, a finished batch and its output, a webhook endpoint and a dashboard user
 * read back as they were written, and new turns are stored beside them.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/http.js';
import { freshDatabase, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { runCli, startGatewayProcess, startSimulatorProcess, tempDir, writeConfig, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

const FIXTURE = join(process.cwd(), 'test/fixtures/earlier-store');
/** The key make-fixture.mjs sealed the webhook signing secrets with. */
const ENV = { SWITCHBOARD_SECRET_KEY: Buffer.alloc(32, 11).toString('base64') };

interface Facts {
  readonly minted: { readonly id: string; readonly value: string };
  readonly cliKey: string;
  readonly response: { readonly id: string; readonly text: string };
  readonly conversation: string;
  readonly file: { readonly id: string; readonly content: string };
  readonly batch: { readonly id: string; readonly output_file_id: string };
  readonly webhook: { readonly id: string; readonly url: string };
  readonly usage: { readonly data: readonly { readonly start_time: number; readonly requests: number; readonly total_tokens: number }[] };
}

interface Template {
  readonly fixture: { readonly project: string; readonly keys: { readonly full: string } };
  readonly [field: string]: unknown;
}

const template = readFileSync(join(FIXTURE, 'config.json'), 'utf8');
const { project: PROJECT, keys } = (JSON.parse(template) as Template).fixture;
const facts = JSON.parse(readFileSync(join(FIXTURE, 'facts.json'), 'utf8')) as { sqlite: Facts; postgres: Facts };

function configFor(simUrl: string, storage: Record<string, unknown> | null): Record<string, unknown> {
  const { fixture: _fixture, ...config } = JSON.parse(template.replaceAll('SIM_URL', simUrl)) as Template;
  return storage ? { ...config, storage } : config;
}

/** Loads the earlier build's pg_dump into a fresh database (psql's meta-commands dropped: plain SQL only). */
async function loadDump(database: TestDatabase): Promise<void> {
  const dump = readFileSync(join(FIXTURE, 'postgres.sql'), 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('\\'))
    .join('\n');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(dump);
  } finally {
    await client.end();
  }
}

interface Opened {
  readonly gw: GatewayProcess;
  /** The CLI's store arguments for this backend. */
  readonly cliArgs: readonly string[];
}

let sim: SimulatorProcess;
beforeAll(async () => {
  sim = await startSimulatorProcess();
});
afterAll(async () => {
  await sim?.stop();
});

const backends: readonly [string, keyof typeof facts][] = [
  ['SQLite', 'sqlite'],
  ['PostgreSQL', 'postgres'],
];

describe.each(backends)('a %s store made by the earlier build', (_name, kind) => {
  const made = facts[kind];
  let opened: Opened;
  let database: TestDatabase | null = null;
  const base = (): string => `${opened.gw.url}/${PROJECT}/v1`;
  const get = (path: string, key = keys.full) => call(`${base()}${path}`, { key });

  beforeAll(async () => {
    const dir = tempDir();
    if (kind === 'sqlite') {
      cpSync(join(FIXTURE, 'sqlite'), dir, { recursive: true });
      const dbPath = join(dir, 'switchboard.db');
      const config = configFor(sim.url, null);
      opened = { gw: await startGatewayProcess(config, { dir, dbPath, env: ENV }), cliArgs: ['--db', dbPath] };
    } else {
      await requirePostgres();
      database = await freshDatabase();
      await loadDump(database);
      const config = configFor(sim.url, { kind: 'postgres', url: database.url });
      opened = { gw: await startGatewayProcess(config, { dir, env: ENV }), cliArgs: ['--config', writeConfig(dir, config)] };
    }
  }, 90_000);

  afterAll(async () => {
    await opened?.gw.stop();
    await database?.drop();
  });

  it('authenticates every key it held: from the config, minted over the API, made by the CLI', async () => {
    for (const key of [keys.full, made.minted.value, made.cliKey]) expect((await get('/models', key)).status).toBe(200);
    const listed = (await get('/management/api-keys')).body as { data: { id: string; name: string | null }[] };
    expect(listed.data.find((k) => k.id === made.minted.id)?.name).toBe('minted');
    expect(listed.data.some((k) => k.name === 'from-the-cli')).toBe(true);
  });

  it('reads the stored Response, the conversation, the files and the finished batch back as written', async () => {
    const response = (await get(`/responses/${made.response.id}`)).body as { status: string; output: { content: { text: string }[] }[] };
    expect(response.status).toBe('completed');
    expect(response.output[0]?.content[0]?.text).toBe(made.response.text);
    const items = (await get(`/conversations/${made.conversation}/items`)).body as { data: unknown[] };
    expect(JSON.stringify(items.data)).toContain('in a conversation');
    const content = await fetch(`${base()}/files/${made.file.id}/content`, { headers: { authorization: `Bearer ${keys.full}` } });
    expect(await content.text()).toBe(made.file.content);
    const batch = (await get(`/batches/${made.batch.id}`)).body as { status: string; output_file_id: string; request_counts: unknown };
    expect(batch).toMatchObject({ status: 'completed', output_file_id: made.batch.output_file_id, request_counts: { total: 2, completed: 2, failed: 0 } });
    const output = await fetch(`${base()}/files/${batch.output_file_id}/content`, { headers: { authorization: `Bearer ${keys.full}` } });
    const lines = (await output.text()).trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string; response: { body: { choices: { message: { content: string } }[] } } });
    expect(lines.map((l) => [l.custom_id, l.response.body.choices[0]?.message.content]).sort()).toEqual([['one', 'one'], ['two', 'two']]);
  });

  it('lists the webhook endpoint and the dashboard user', async () => {
    const hooks = (await get('/webhooks')).body as { data: { id: string; url: string }[] };
    expect(hooks.data.map((h) => [h.id, h.url])).toEqual([[made.webhook.id, made.webhook.url]]);
    const users = await runCli(['users', 'list', ...opened.cliArgs, '--json'], ENV);
    expect(users.code, users.stderr).toBe(0);
    expect(users.stdout).toContain('owner@example.com');
  });

  it('keeps the usage ledger, and stores new turns beside it', async () => {
    const day = made.usage.data[0];
    if (!day) throw new Error('the fixture holds no usage');
    const usage = async () => {
      const end = Math.ceil(Date.now() / 1000) + 1;
      const res = await get(`/management/usage?group_by=day&start_time=${day.start_time}&end_time=${end}`);
      return (res.body as { data: { requests: number; total_tokens: number }[] }).data;
    };
    expect((await usage()).reduce((n, d) => n + d.requests, 0)).toBe(day.requests);
    const turn = await call(`${base()}/chat/completions`, { key: made.cliKey, body: { model: 'model-chat', messages: [{ role: 'user', content: 'echo: after the upgrade' }] } });
    expect(turn.status).toBe(200);
    await expect.poll(async () => (await usage()).reduce((n, d) => n + d.requests, 0), { timeout: 10_000, interval: 50 }).toBe(day.requests + 1);
  });
});
