/**
 * Processes that start at the same moment on one fresh SQLite file (issue 19, defect 7): each migrates
 * and syncs the config file at start. Before migrations took the write lock and re-read the schema
 * version under it, two processes both read version 0, and the second to get the lock failed with
 * `table projects already exists`; and switching the new file to WAL, which SQLite does without its
 * busy handler, failed now and then with `database is locked`. Real child processes race here, released
 * together at one instant after their imports are loaded; they run the compiled store from dist/ (built
 * by the global setup).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { openDatabase } from '../../../src/store/db.js';
import { makeKeys, testConfig } from '../../helpers/configs.js';

const dir = mkdtempSync(join(tmpdir(), 'store-db-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const dist = (module: string): string => pathToFileURL(join(process.cwd(), 'dist/src', module)).href;

// argv: the database file, the instant to start at (ms), the raw config as JSON.
const CHILD = `
const [dbPath, startAt, rawConfig] = process.argv.slice(1);
const { openDatabase } = await import(${JSON.stringify(dist('store/db.js'))});
const { syncConfig } = await import(${JSON.stringify(dist('store/catalog/sqlite-catalog.js'))});
const { parseConfig } = await import(${JSON.stringify(dist('config.js'))});
const config = parseConfig(JSON.parse(rawConfig));
// Spin to the shared instant: a timer would add its own jitter.
while (Date.now() < Number(startAt)) {}
const db = openDatabase(dbPath);
const summary = syncConfig(db, config, Date.now());
process.stdout.write(JSON.stringify({ version: db.pragma('user_version', { simple: true }), keys: summary.keys }));
db.close();
`;

interface ChildResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function startChild(dbPath: string, startAt: number, rawConfig: string): Promise<ChildResult> {
  const proc = spawn(process.execPath, ['--input-type=module', '-e', CHILD, dbPath, String(startAt), rawConfig], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The thrown error's own line, not the source excerpt Node prints above it. */
const errorLine = (stderr: string): string => stderr.split('\n').find((l) => /^\w*Error\b/.test(l)) ?? stderr.trim();

/** The schema as SQLite holds it: every table, index and trigger with its SQL. */
function schemaOf(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[], { type: string; name: string; sql: string | null }>("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
      .all()
      .map((r) => `${r.type} ${r.name} ${r.sql ?? ''}`);
  } finally {
    db.close();
  }
}

const PROCESSES = 4;
const ROUNDS = 8;

describe('opening one fresh database from several processes at once', () => {
  it(`migrates once and syncs the config once when ${PROCESSES} processes start together (${ROUNDS} rounds)`, { timeout: 120_000 }, async () => {
    const raw = testConfig('http://127.0.0.1:9', makeKeys());
    const rawConfig = JSON.stringify(raw);
    const config = parseConfig(raw);
    const declaredKeys = config.projects.reduce((n, p) => n + p.keys.length, 0);

    // The reference: one process alone on its own file.
    const reference = join(dir, 'reference.db');
    const alone = openDatabase(reference);
    const version = alone.pragma('user_version', { simple: true }) as number;
    alone.close();
    const expected = schemaOf(reference);

    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const path = join(dir, `race-${round}.db`);
      // Far enough ahead for every child to load its modules before the shared start.
      const startAt = Date.now() + 1500;
      const results = await Promise.all(Array.from({ length: PROCESSES }, () => startChild(path, startAt, rawConfig)));
      for (const r of results) if (r.code !== 0) failures.push(`round ${round}: exit ${r.code}: ${errorLine(r.stderr)}`);
      if (results.some((r) => r.code !== 0)) continue;

      for (const r of results) expect(JSON.parse(r.stdout)).toEqual({ version, keys: declaredKeys });
      expect(schemaOf(path)).toEqual(expected);
      const db = new Database(path, { readonly: true });
      // One row per declared key and project: no process inserted what another had just inserted.
      expect(db.prepare('SELECT COUNT(*) AS n FROM api_keys').get()).toEqual({ n: declaredKeys });
      expect(db.prepare('SELECT COUNT(*) AS n FROM api_key_secrets').get()).toEqual({ n: declaredKeys });
      expect(db.prepare('SELECT COUNT(*) AS n FROM projects').get()).toEqual({ n: config.projects.length });
      db.close();
    }
    expect(failures).toEqual([]);
  });
});
