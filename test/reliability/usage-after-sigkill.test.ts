/**
 * Issue 17: "the usage ledger after a SIGKILL under load holds every turn that was answered". Chat turns
 * run 32 at a time; the gateway is killed with SIGKILL while they do. Every turn whose answer reached the
 * client is in the ledger once the gateway has started again on the same store (the usage journal's
 * segments are replayed at start), and none is there twice. Before the journal, the rows of the last
 * 50 ms (the batch interval) were lost.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatLoad, ledgerCheck } from '../helpers/chat-load.js';
import { makeKeys, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

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

describe('SIGKILL under chat load', () => {
  it('loses no answered turn from the usage ledger, and bills none twice', { timeout: 180_000 }, async () => {
    const config = testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 } });
    const dbPath = join(dir, 'killed.db');
    const answered: string[] = [];
    // On a starved machine this process may read the 400th answer only after the gateway has flushed every
    // row (nothing left in the journal, so nothing to replay): killed again, on the same store, until a kill
    // leaves segments behind. Every kill's answers count.
    let attempts = 0;
    do {
      const gateway = await startGatewayProcess(config, { dir, dbPath });
      processes.push(gateway);
      answered.push(...(await killUnderLoad(gateway, 400)));
      attempts += 1;
    } while (leftSegments(dbPath).length === 0 && attempts < 5);
    expect(leftSegments(dbPath).length).toBeGreaterThan(0);

    const second = await startGatewayProcess(config, { dir, dbPath });
    processes.push(second);
    expect(ledgerCheck(dbPath, answered)).toEqual({ answered: answered.length, missing: [], doubled: [] });
    expect(second.stdout.join('')).toMatch(/usage journal: rows of a stopped process replayed/);
  });
});
