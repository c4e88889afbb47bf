/**
 * Issue 17: "the usage ledger after a SIGKILL under load holds every turn that was answered". Chat turns
 * run 32 at a time; the gateway is killed with SIGKILL while they do. Every turn whose answer reached the
 * client is in the ledger once the gateway has started again on the same store (the usage journal's
 * segments are replayed at start), and none is there twice. Before the journal, the rows of the last
 * 50 ms (the batch interval) were lost. The same holds for a backup taken after the kill, before any
 * restart, once it is restored and a gateway has started on it.
 */
import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatLoad, ledgerCheck } from '../helpers/chat-load.js';
import { makeKeys, testConfig, type TestKeys } from '../helpers/configs.js';
import { runCli, startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let keys: TestKeys;
let dir: string;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  dir = tempDir();
});

afterAll(async () => {
  for (const p of processes) await p.stop();
  await sim?.stop();
});

/** Segments the killed process left in the journal (journalDirOf in store/usage-journal.ts: `<db>.usage-journal`). */
const leftSegments = (dbPath: string): string[] => {
  try {
    return readdirSync(`${dbPath}.usage-journal`).filter((f) => f.startsWith('seg-'));
  } catch {
    return [];
  }
};

/**
 * Chat turns 32 at a time until `answers` more are answered, then SIGKILL at once: the ids answered. The
 * rows of the last answers are then in the journal, not yet in the ledger (the writer flushes every 50 ms).
 */
async function killUnderLoad(gateway: GatewayProcess, answers: number): Promise<string[]> {
  let killed: Promise<unknown> | null = null;
  const load = chatLoad(gateway, keys.full, 32, (answered) => {
    if (answered.length >= answers && killed === null) killed = gateway.stop('SIGKILL');
  });
  while (killed === null) await new Promise((r) => setTimeout(r, 5));
  await killed;
  await load.stop();
  return load.answered;
}

/**
 * Kills gateways on `dbPath` under load until a kill leaves segments in the journal: the ids answered. On a
 * starved machine this process may read the 400th answer only after the gateway has flushed every row
 * (nothing left in the journal, so nothing to replay): killed again, on the same store, until a kill
 * leaves segments behind. Every kill's answers count.
 */
async function killLeavingSegments(config: unknown, storeDir: string, dbPath: string): Promise<string[]> {
  const answered: string[] = [];
  let attempts = 0;
  do {
    const gateway = await startGatewayProcess(config, { dir: storeDir, dbPath });
    processes.push(gateway);
    answered.push(...(await killUnderLoad(gateway, 400)));
    attempts += 1;
  } while (leftSegments(dbPath).length === 0 && attempts < 5);
  expect(leftSegments(dbPath).length).toBeGreaterThan(0);
  return answered;
}

describe('SIGKILL under chat load', () => {
  const config = (): unknown => testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 } });

  it('loses no answered turn from the usage ledger, and bills none twice', { timeout: 180_000 }, async () => {
    const dbPath = join(dir, 'killed.db');
    const answered = await killLeavingSegments(config(), dir, dbPath);

    const second = await startGatewayProcess(config(), { dir, dbPath });
    processes.push(second);
    expect(ledgerCheck(dbPath, answered)).toEqual({ answered: answered.length, missing: [], doubled: [] });
    expect(second.stdout.join('')).toMatch(/usage journal: rows of a stopped process replayed/);
  });

  // Regression: a backup taken after the kill, before a restart, copied the database alone: the turns whose
  // rows were still in the journal were missing from it (69 answered, 63 in the backup). And restore wrote
  // beside a journal left by the store that was there, which its gateway then replayed (63 became 102).
  it('a backup taken before the restart holds every answered turn once the restored store has started, and restore refuses a target holding journal segments', { timeout: 180_000 }, async () => {
    const storeDir = tempDir();
    const dbPath = join(storeDir, 'crashed.db');
    const answered = await killLeavingSegments(config(), storeDir, dbPath);

    const backupDir = join(tempDir(), 'backup');
    const backup = await runCli(['backup', '--db', dbPath, '--to', backupDir]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/wrote \S+crashed\.db\.usage-journal\/ \(\d+ usage rows of answered turns not yet in the database, in \d+ journal segments/);

    // The store moved aside as README "Restoring" says, its journal forgotten: restore refuses, writing nothing.
    const aside = join(storeDir, 'old');
    mkdirSync(aside);
    for (const name of readdirSync(storeDir)) if (name !== 'old' && !name.endsWith('.usage-journal')) renameSync(join(storeDir, name), join(aside, name));
    const refused = await runCli(['restore', '--from', backupDir, '--db', dbPath]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${dbPath}.usage-journal holds ${leftSegments(dbPath).length} usage journal segments of the store that was there`);
    expect(existsSync(dbPath)).toBe(false);

    const restored = join(tempDir(), 'restored.db');
    const put = await runCli(['restore', '--from', backupDir, '--db', restored]);
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout).toContain(`usage journal segments into ${restored}.usage-journal/`);
    const started = await startGatewayProcess(config(), { dir: dirname(restored), dbPath: restored });
    processes.push(started);
    expect(ledgerCheck(restored, answered)).toEqual({ answered: answered.length, missing: [], doubled: [] });
    expect(started.stdout.join('')).toMatch(/usage journal: rows of a stopped process replayed/);
  });
});
