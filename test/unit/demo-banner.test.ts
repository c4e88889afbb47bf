/**
 * `npm start`'s banner (src/demo-banner.ts, issue 34): it names the dashboard's address and the one
 * command that makes a first owner of the demo project; that command, run as printed in a copy of the
 * demo's folder, makes the owner in the demo's store.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../src/config.js';
import { banner, CONFIG, FIRST_OWNER } from '../../src/demo-banner.js';
import { openDatabase } from '../../src/store/db.js';
import { createIdentityStore } from '../../src/store/identity/identity-store.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { CLI, tempDir } from '../helpers/processes.js';

const demo = parseConfig(parseYaml(readFileSync(CONFIG, 'utf8')), CONFIG, join(process.cwd(), 'data'));

describe('npm start banner', () => {
  it('prints the dashboard address and the command that makes its first owner', () => {
    const lines = banner(demo, 'http://127.0.0.1:8080', null).split('\n');
    expect(lines).toContain('  dashboard:       http://127.0.0.1:8080/dashboard/');
    expect(lines).toContain(`      ${FIRST_OWNER('proj_demo')}`);
    expect(FIRST_OWNER('proj_demo')).toBe(
      "printf '%s\\n' 'a long passphrase' | npx switchboard users create --email you@example.com --password-stdin --role owner --project proj_demo --config data/demo.yaml",
    );
  });

  it('gives a command that works as printed against the demo store', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'data'));
    copyFileSync(CONFIG, join(dir, CONFIG));
    // The store `npm start` has made by the time the banner shows (the CLI writes into an existing store only).
    openDatabase(join(dir, 'data', 'switchboard.db')).close();
    const command = FIRST_OWNER('proj_demo').replace('npx switchboard', `node ${CLI}`);
    const userId = execFileSync('sh', ['-c', command], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    expect(userId).toMatch(/^usr_[0-9a-f]{24}$/);
    const db = openDatabase(join(dir, 'data', 'switchboard.db'));
    try {
      expect(await createIdentityStore(createSqliteRunner(db)).users.roles(userId)).toEqual([{ projectId: 'proj_demo', role: 'owner', workspaceIds: null }]);
    } finally {
      db.close();
    }
  });
});
