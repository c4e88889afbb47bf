/**
 * The operator's commands through the real CLI (issue 20): `backup` of a store a gateway is serving and
 * writing to, a restore that starts, `keys generate | list | revoke | rotate` against a running gateway's
 * store, and `--help` / `--version`.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/store/secret-box.js';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { advanceClock, call, expectError } from '../helpers/http.js';
import { runCli, startGatewayProcess, startSimulatorProcess, tempDir, writeConfig, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

const PUBLIC_URL = 'https://93.184.216.34/hooks';
const KEY_VALUE = /^svc_test_[A-Za-z0-9_-]{43}$/;

let sim: SimulatorProcess;
let keys: TestKeys;
let generated: string;
let gw: GatewayProcess;
let config: ReturnType<typeof testConfig>;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  // A value from `keys generate` is a bootstrap key the config accepts as printed.
  const gen = await runCli(['keys', 'generate', '--project-slug', 'test']);
  generated = gen.stdout.trim();
  config = testConfig(sim.url, keys, { extraKeys: [{ value: generated, scopes: ['inference'], name: 'generated' }] });
  gw = await startGatewayProcess(config);
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

const models = (key: string) => call(`${gw.url}/${PROJECT}/v1/models`, { key });
const chat = (key: string) => call(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, { key, body: { model: 'model-chat', messages: [{ role: 'user', content: 'hi' }] } });

async function uploadFile(url: string, bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([new Uint8Array(bytes)]), 'input.jsonl');
  const r = await fetch(`${url}/${PROJECT}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${keys.full}` }, body: form });
  expect(r.status).toBe(200);
  return ((await r.json()) as { id: string }).id;
}

async function createCliKey(): Promise<{ id: string; value: string }> {
  const r = await runCli(['keys', 'create', '--project', PROJECT, '--scopes', 'inference', '--db', gw.dbPath]);
  expect(r.code).toBe(0);
  return { id: /created key (key_[0-9a-f]+)/.exec(r.stderr)?.[1] ?? '', value: r.stdout.trim() };
}

/** The gateway notices another process's writes within a second (data_version poll): wait for the answer. */
async function eventually(check: () => Promise<number>, status: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while ((await check()) !== status) {
    if (Date.now() > deadline) throw new Error(`no ${status} within 5 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('--help and --version', () => {
  it.each([[['--help']], [['-h']], [['keys', '--help']], [['keys', 'rotate', '--help']], [['backup', '--help']], [['serve', '--help']]])(
    'switchboard %j prints the usage and exits 0',
    async (args) => {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^usage:\n/);
      expect(r.stderr).toBe('');
    },
  );

  it('prints the version from package.json', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const r = await runCli(['--version']);
    expect(r).toMatchObject({ code: 0, stdout: `switchboard ${pkg.version}\n` });
  });
});

describe('switchboard keys generate', () => {
  it('prints a fresh svc_<slug>_<43> value a gateway accepts as a bootstrap key', async () => {
    expect(generated).toMatch(KEY_VALUE);
    expect((await models(generated)).status).toBe(200);
    const again = await runCli(['keys', 'generate', '--project-slug', 'test']);
    expect(again.stdout.trim()).not.toBe(generated);
  });

  it('takes the slug from the config with --project and --config', async () => {
    const r = await runCli(['keys', 'generate', '--project', PROJECT, '--config', gw.configPath]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(KEY_VALUE);
  });

  it.each([
    [[], '--project-slug, or --project with --config'],
    [['--project-slug', 'Not_A_Slug'], '--project-slug: must be a project slug'],
    [['--project', 'proj_nope', '--config', 'CONFIG'], 'declares no project proj_nope'],
  ])('exits 2 for %j', async (args, message) => {
    const r = await runCli(['keys', 'generate', ...args.map((a) => (a === 'CONFIG' ? gw.configPath : a))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
  });
});

describe('switchboard keys list', () => {
  it('lists every key of the project with id, prefix and status, never a value', async () => {
    const r = await runCli(['keys', 'list', '--project', PROJECT, '--db', gw.dbPath]);
    expect(r.code).toBe(0);
    const [header, ...lines] = r.stdout.trim().split('\n');
    expect(header).toMatch(/^ID\s+PREFIX\s+STATUS\s+SCOPES\s+SOURCE/);
    expect(lines.length).toBeGreaterThanOrEqual(config.projects[0]?.keys.length ?? 0);
    expect(r.stdout).toMatch(/generated$/m);
    expect(r.stdout).toMatch(/\bexpired\b/);
    for (const value of Object.values(keys)) expect(r.stdout).not.toContain(value);
  });

  it('prints the management API list body with --json', async () => {
    const r = await runCli(['keys', 'list', '--project', PROJECT, '--config', gw.configPath, '--db', gw.dbPath, '--json']);
    const body = JSON.parse(r.stdout) as { object: string; data: { object: string; prefix: string; status: string; source: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.every((k) => k.object === 'api_key' && k.prefix.startsWith('svc_'))).toBe(true);
    expect(body.data.find((k) => generated.startsWith(k.prefix))).toMatchObject({ status: 'active', source: 'config' });
  });

  it('exits 2 for a project the store does not hold', async () => {
    const r = await runCli(['keys', 'list', '--project', 'proj_nope', '--db', gw.dbPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no project proj_nope');
  });
});

describe('switchboard keys revoke and rotate', () => {
  it('revokes a key for good: the running gateway answers 401 key_revoked, and a second revoke changes nothing', async () => {
    const key = await createCliKey();
    expect((await models(key.value)).status).toBe(200);
    const r = await runCli(['keys', 'revoke', key.id, '--project', PROJECT, '--db', gw.dbPath]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`revoked ${key.id}`);
    await eventually(async () => (await models(key.value)).status, 401);
    expectError(await models(key.value), 401, 'key_revoked');
    const again = await runCli(['keys', 'revoke', key.id, '--project', PROJECT, '--db', gw.dbPath]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already revoked');
    const rotate = await runCli(['keys', 'rotate', key.id, '--project', PROJECT, '--db', gw.dbPath]);
    expect(rotate.code).toBe(2);
    expect(rotate.stderr).toContain(`API key ${key.id} is revoked; only an active key can be rotated`);
  });

  it('exits 2 naming an unknown key, and without a key id', async () => {
    const unknown = await runCli(['keys', 'revoke', 'key_000000000000000000000000', '--project', PROJECT, '--db', gw.dbPath]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('has no API key "key_000000000000000000000000"');
    const missing = await runCli(['keys', 'rotate', '--project', PROJECT, '--db', gw.dbPath]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('key id');
  });

  // Last in this file's use of the gateway: it moves the gateway's clock a day forward.
  it('rotates: a new value at once, the old one valid 24 h more (as the API rotates), then 401 key_revoked', async () => {
    const key = await createCliKey();
    const before = Math.floor(Date.now() / 1000);
    const r = await runCli(['keys', 'rotate', key.id, '--project', PROJECT, '--db', gw.dbPath]);
    expect(r.code).toBe(0);
    const value = r.stdout.trim();
    expect(value).toMatch(KEY_VALUE);
    expect(r.stderr).toContain('the previous value works until');
    await eventually(async () => (await models(value)).status, 200);
    expect((await models(key.value)).status).toBe(200);
    const listed = JSON.parse((await runCli(['keys', 'list', '--project', PROJECT, '--db', gw.dbPath, '--json'])).stdout) as {
      data: { id: string; prefix: string; previous_value_valid_until: number | null }[];
    };
    const row = listed.data.find((k) => k.id === key.id);
    expect(value.startsWith(row?.prefix ?? '-')).toBe(true);
    expect(row?.previous_value_valid_until).toBeGreaterThanOrEqual(before + 86_400);
    expect(row?.previous_value_valid_until).toBeLessThanOrEqual(before + 86_400 + 60);
    await advanceClock(gw.url, 86_400_000 + 60_000);
    expectError(await models(key.value), 401, 'key_revoked');
    expect((await models(value)).status).toBe(200);
  });
});

describe('switchboard backup', () => {
  it('exits 2 for a store that does not exist, and writes nothing', async () => {
    const to = join(tempDir(), 'out');
    const r = await runCli(['backup', '--db', join(tempDir(), 'missing.db'), '--to', to]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no database at');
    expect(existsSync(to)).toBe(false);
    const viaConfig = writeConfig(tempDir(), { ...config, storage: { path: 'nothing-here.db' } });
    const c = await runCli(['backup', '--config', viaConfig, '--to', to]);
    expect(c.code).toBe(2);
    expect(c.stderr).toContain(`storage.path in ${viaConfig}: no database at`);
  });

  // Regression: bytes missing from the store's files/ (its row still there) were taken for a file deleted
  // while the backup ran: exit 0, the row dropped from the copy. Bytes of another size exited 1 and left
  // s.db, s.db.key and files/ in DIR, so the next try failed with "already exists".
  it('fails, writing nothing, on a file whose bytes are missing or of another size, naming it; repaired, the same command succeeds', async () => {
    const dir = tempDir();
    const own = await startGatewayProcess(config, { dir });
    const lost = await uploadFile(own.url, Buffer.from('{"custom_id":"lost"}\n'));
    const cut = await uploadFile(own.url, Buffer.from('{"custom_id":"cut"}\n'.repeat(10)));
    // A webhook makes a sealed value, so the store has a key file for the backup to copy (and remove).
    expect((await call(`${own.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: PUBLIC_URL, events: ['exec.completed'] } })).status).toBe(201);
    expect(await own.stop()).toBe(0);
    const filesDir = join(dir, 'files');
    const lostPath = join(filesDir, lost);
    const cutPath = join(filesDir, cut);
    const lostBytes = readFileSync(lostPath);
    const cutBytes = readFileSync(cutPath);

    const into = join(tempDir(), 'nested', 'backup');
    const expectRefused = async (line: string): Promise<void> => {
      const r = await runCli(['backup', '--db', own.dbPath, '--to', into]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(line);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).toBe('');
      expect(existsSync(join(into, '..'))).toBe(false);
    };
    rmSync(lostPath);
    await expectRefused(`file ${lost} has no bytes at ${lostPath}, and the store still lists it (${lostBytes.length} bytes)`);
    writeFileSync(lostPath, lostBytes);
    writeFileSync(cutPath, cutBytes.subarray(0, 7));
    await expectRefused(`file ${cut} at ${cutPath} holds 7 bytes where the store records ${cutBytes.length}`);
    // Into a folder that exists: it is left as it was.
    mkdirSync(into, { recursive: true });
    const again = await runCli(['backup', '--db', own.dbPath, '--to', into]);
    expect(again.code).toBe(2);
    expect(readdirSync(into)).toEqual([]);

    writeFileSync(cutPath, cutBytes);
    const ok = await runCli(['backup', '--db', own.dbPath, '--to', into]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`wrote ${join(into, 'files')}/ (2 uploaded files and 0 upload parts`);
    expect(ok.stdout).not.toContain('deleted while the backup ran');
    expect(readdirSync(join(into, 'files')).sort()).toEqual([cut, lost, 'parts'].sort());
  });

  it('copies a store while the gateway serves and writes, with a key file that opens its sealed values; the restored copy starts', async () => {
    const created = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: PUBLIC_URL, events: ['exec.completed'] } });
    expect(created.status).toBe(201);
    const webhook = created.body as { id: string; secret: string };
    const cliKey = await createCliKey();
    const bytes = Buffer.from('{"custom_id":"a"}\n'.repeat(1000));
    const uploaded = await uploadFile(gw.url, bytes);
    const deleted = await uploadFile(gw.url, Buffer.from('gone\n'));
    expect((await call(`${gw.url}/${PROJECT}/v1/files/${deleted}`, { key: keys.full, method: 'DELETE' })).status).toBe(200);
    for (let i = 0; i < 5; i += 1) expect((await chat(keys.full)).status).toBe(200);
    const usageRows = (path: string): number => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT COUNT(*) AS n FROM usage_events').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    // The ledger writes in batches: wait until these turns are committed, so the copy must hold them.
    const deadline = Date.now() + 5000;
    while (usageRows(gw.dbPath) < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const committed = usageRows(gw.dbPath);
    expect(committed).toBeGreaterThanOrEqual(5);

    // Turns keep arriving (and the ledger keeps writing) while the backup runs.
    let writing = true;
    const load = (async () => {
      let n = 0;
      while (writing) {
        await chat(keys.full);
        n += 1;
      }
      return n;
    })();
    const to = join(tempDir(), 'backup-1');
    let result;
    try {
      result = await runCli(['backup', '--db', gw.dbPath, '--to', to]);
    } finally {
      writing = false;
    }
    expect(await load).toBeGreaterThan(0);
    expect(result.code).toBe(0);
    const copy = join(to, 'switchboard.db');
    expect(result.stdout).toContain(`wrote ${copy} (a consistent copy of ${gw.dbPath}`);
    expect(result.stdout).toContain(`wrote ${copy}.key (its key file; checked: it opens the sealed values in the copy)`);
    expect(result.stdout).toContain(`wrote ${join(to, 'files')}/ (1 uploaded files and 0 upload parts`);
    // Turns still in the usage journal's segments (the writer commits every 50 ms) come as those segments.
    const journal = result.stdout.includes(`wrote ${copy}.usage-journal/ (`) ? ['switchboard.db.usage-journal'] : [];
    expect(readdirSync(to).sort()).toEqual(['files', 'switchboard.db', 'switchboard.db.key', ...journal]);
    expect(readdirSync(join(to, 'files')).sort()).toEqual([uploaded, 'parts'].sort());

    const db = new Database(copy, { readonly: true });
    try {
      expect((db.prepare('SELECT COUNT(*) AS n FROM usage_events').get() as { n: number }).n).toBeGreaterThanOrEqual(committed);
      expect(db.prepare('SELECT id FROM api_keys WHERE id = ?').get(cliKey.id)).toBeDefined();
      const row = db.prepare('SELECT secret_sealed FROM webhook_endpoints WHERE id = ?').get(webhook.id) as { secret_sealed: string };
      const box = createSecretBox(Buffer.from(readFileSync(`${copy}.key`, 'utf8').trim(), 'base64'));
      expect(box.open(row.secret_sealed, webhook.id)).toBe(webhook.secret);
    } finally {
      db.close();
    }

    const again = await runCli(['backup', '--db', gw.dbPath, '--to', to]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');

    // Restore (as on a new host): the database, its key file and the uploaded files, under the name the gateway is given.
    const restoredDir = tempDir();
    const restored = join(restoredDir, 'restored.db');
    const put = await runCli(['restore', '--from', to, '--db', restored]);
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout).toContain(`restored ${restored} and ${restored}.key and 1 uploaded files into ${join(restoredDir, 'files')}/`);
    // A backup missing a file's bytes is refused before anything is written.
    const broken = join(tempDir(), 'broken');
    cpSync(to, broken, { recursive: true });
    rmSync(join(broken, 'files', uploaded));
    const elsewhere = join(tempDir(), 'elsewhere.db');
    const refused = await runCli(['restore', '--from', broken, '--db', elsewhere]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${join(broken, 'files', uploaded)} is missing: the database records ${bytes.length} bytes for file ${uploaded}: this backup is incomplete`);
    expect(existsSync(elsewhere)).toBe(false);
    const twice = await runCli(['restore', '--from', to, '--db', restored]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(`${restored} already exists: stop the gateway and move the current store aside`);
    const back = await startGatewayProcess(config, { dir: restoredDir, dbPath: restored });
    try {
      // At start, though the restored database lists the serving gateway, alive on this host, as an instance.
      if (journal.length > 0) expect(back.stdout.join('')).toMatch(/usage journal: rows of a stopped process replayed/);
      const content = await fetch(`${back.url}/${PROJECT}/v1/files/${uploaded}/content`, { headers: { authorization: `Bearer ${keys.full}` } });
      expect(content.status).toBe(200);
      expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
      expect((await call(`${back.url}/${PROJECT}/v1/files/${deleted}`, { key: keys.full })).status).toBe(404);
      const got = await call(`${back.url}/${PROJECT}/v1/webhooks/${webhook.id}`, { key: keys.full });
      expect(got.status).toBe(200);
      expect((got.body as { url: string }).url).toBe(PUBLIC_URL);
      expect((await call(`${back.url}/${PROJECT}/v1/models`, { key: cliKey.value })).status).toBe(200);
    } finally {
      expect(await back.stop()).toBe(0);
    }
  });
});

// Regression: a copy failing partway (a backup file unreadable, a full disk) left the database and what
// had been copied before it at the target, exit 1: a later start ran on half a store, and the same
// command, run again, was refused with "already exists".
describe('switchboard restore', () => {
  it('is all or nothing: a copy failing partway leaves the target as it was and names the backup file, exit 1', async () => {
    await uploadFile(gw.url, Buffer.from('{"custom_id":"r"}\n'));
    const backup = join(tempDir(), 'backup');
    expect((await runCli(['backup', '--db', gw.dbPath, '--to', backup])).code).toBe(0);
    // Root reads a chmod 000 file: a directory in a file's place, and a dangling symlink, fail the copy for anyone.
    const keyIsDir = join(tempDir(), 'key-is-dir');
    cpSync(backup, keyIsDir, { recursive: true });
    rmSync(join(keyIsDir, 'switchboard.db.key'));
    mkdirSync(join(keyIsDir, 'switchboard.db.key'));
    const segmentGone = join(tempDir(), 'segment-gone');
    cpSync(backup, segmentGone, { recursive: true });
    const segment = join(segmentGone, 'switchboard.db.usage-journal', 'seg-inst_0123abcd-1-1.jsonl');
    mkdirSync(join(segmentGone, 'switchboard.db.usage-journal'), { recursive: true });
    symlinkSync(join(segmentGone, 'nothing-here'), segment);

    // Into a folder that does not exist: it still does not.
    const absent = join(tempDir(), 'new', 'store');
    const key = await runCli(['restore', '--from', keyIsDir, '--db', join(absent, 'gw.db')]);
    expect(key.code).toBe(1);
    expect(existsSync(join(absent, '..'))).toBe(false);
    expect(key.stderr).toContain(`restore failed and left nothing at ${join(absent, 'gw.db')}: could not copy ${join(keyIsDir, 'switchboard.db.key')} (EISDIR`);

    // Into a folder holding an empty files/ (what a gateway leaves once its store is moved aside): the
    // last copy fails, after the database, key and files; the folder holds what it held, and no more.
    const target = tempDir();
    mkdirSync(join(target, 'files', 'parts'), { recursive: true });
    const journal = await runCli(['restore', '--from', segmentGone, '--db', join(target, 'gw.db')]);
    expect(journal.code).toBe(1);
    expect(readdirSync(target)).toEqual(['files']);
    expect(readdirSync(join(target, 'files'))).toEqual(['parts']);
    expect(readdirSync(join(target, 'files', 'parts'))).toEqual([]);
    expect(journal.stderr).toContain(`restore failed and left nothing at ${join(target, 'gw.db')}: could not copy ${segment} (ENOENT`);

    // Nothing is left in the way: the same target takes a sound backup.
    const again = await runCli(['restore', '--from', backup, '--db', join(target, 'gw.db')]);
    expect(again.code, again.stderr).toBe(0);
    expect(readdirSync(target).sort()).toEqual(['files', 'gw.db', 'gw.db.key', ...(existsSync(join(backup, 'switchboard.db.usage-journal')) ? ['gw.db.usage-journal'] : [])].sort());
    expect(readdirSync(join(target, 'files')).filter((n) => n.startsWith('file-')).sort()).toEqual(readdirSync(join(backup, 'files')).filter((n) => n.startsWith('file-')).sort());
  });
});
