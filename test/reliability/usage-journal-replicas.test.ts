/**
 * Issue 12, the usage journal with several instances on one store (store/usage-journal.ts). Segments are
 * named by the instance that writes them, and an instance replays only the segments of instances that are
 * gone, claiming each by renaming it first. So:
 * - two processes under chat load, one SIGKILLed: the survivor replays the killed one's segments (at the
 *   heartbeat that finds it dead) and never its own open ones; the ledger holds every answered turn once;
 * - both killed, then two started at the same moment: each leftover segment is replayed by exactly one of
 *   them; again every answered turn is in the ledger once.
 * The instance lease is 5 s here (SWITCHBOARD_INSTANCE_LEASE_MS, beats every 1.7 s); on one machine a
 * killed process is found dead through its pid at the next heartbeat.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chatLoad, ledgerCheck } from '../helpers/chat-load.js';
import { makeKeys, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

const LEASE_ENV = { SWITCHBOARD_INSTANCE_LEASE_MS: '5000' };
const WORKERS = 16;
const TURNS_BEFORE_KILL = 150;

let sim: SimulatorProcess;
let keys: TestKeys;
let processes: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
});

afterEach(async () => {
  for (const p of processes) await p.stop();
  processes = [];
});

afterAll(async () => {
  await sim?.stop();
});

async function start(config: unknown, dbPath: string, dir: string, n: number): Promise<GatewayProcess[]> {
  const started = await Promise.all(Array.from({ length: n }, () => startGatewayProcess(config, { dir, dbPath, env: LEASE_ENV })));
  processes.push(...started);
  return started;
}

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The segments each process says it replayed, from its log lines. */
function replayedSegments(gw: GatewayProcess): number {
  let segments = 0;
  for (const line of gw.stdout.join('').split('\n')) {
    if (!line.includes('usage journal: rows of a stopped process replayed')) continue;
    segments += (JSON.parse(line) as { segments: number }).segments;
  }
  return segments;
}

describe('the usage journal with two instances on one store', () => {
  it('the survivor of a SIGKILL replays the killed instance\'s segments once: every answered turn billed, none twice', { timeout: 60_000 }, async () => {
    const config = testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 } });
    const dir = tempDir();
    const dbPath = join(dir, 'journal.db');
    const [victim, survivor] = (await start(config, dbPath, dir, 2)) as [GatewayProcess, GatewayProcess];
    const onVictim = chatLoad(victim, keys.full, WORKERS);
    const onSurvivor = chatLoad(survivor, keys.full, WORKERS);
    await until(() => onVictim.answered.length >= TURNS_BEFORE_KILL && onSurvivor.answered.length >= TURNS_BEFORE_KILL);
    expect(await victim.stop('SIGKILL')).toBe('SIGKILL');
    await onVictim.stop();
    const victimSegments = readdirSync(`${dbPath}.usage-journal`).filter((f) => !f.includes(ownPrefix(survivor)));

    // The survivor keeps serving while its heartbeat finds the victim dead and replays what it left.
    await until(() => readdirSync(`${dbPath}.usage-journal`).every((f) => f.includes(ownPrefix(survivor))));
    await onSurvivor.stop();
    expect(await survivor.stop('SIGTERM')).toBe(0);

    console.log(`usage journal, survivor: ${JSON.stringify({ answered: onVictim.answered.length + onSurvivor.answered.length, left_by_victim: victimSegments.length, replayed_by_survivor: replayedSegments(survivor) })}`);
    // At least those seen just after the kill (the survivor may have replayed some before that look).
    expect(replayedSegments(survivor)).toBeGreaterThanOrEqual(victimSegments.length);
    const answered = [...onVictim.answered, ...onSurvivor.answered];
    expect(ledgerCheck(dbPath, answered)).toEqual({ answered: answered.length, missing: [], doubled: [] });
  });

  it('two instances starting at the same moment replay each leftover segment exactly once between them', { timeout: 60_000 }, async () => {
    const config = testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 } });
    const dir = tempDir();
    const dbPath = join(dir, 'journal.db');
    const killed = await start(config, dbPath, dir, 2);
    const loads = killed.map((gw) => chatLoad(gw, keys.full, WORKERS));
    await until(() => loads.every((l) => l.answered.length >= TURNS_BEFORE_KILL));
    for (const gw of killed) expect(await gw.stop('SIGKILL')).toBe('SIGKILL');
    for (const l of loads) await l.stop();
    const leftover = readdirSync(`${dbPath}.usage-journal`);

    const restarted = await start(config, dbPath, dir, 2);
    for (const gw of restarted) expect(await gw.stop('SIGTERM')).toBe(0);

    console.log(`usage journal, simultaneous starts: ${JSON.stringify({ leftover: leftover.length, replayed_by_each: restarted.map(replayedSegments) })}`);
    expect(restarted.map(replayedSegments).reduce((a, b) => a + b, 0)).toBe(leftover.length);
    expect(readdirSync(`${dbPath}.usage-journal`)).toEqual([]);
    const answered = loads.flatMap((l) => l.answered);
    expect(ledgerCheck(dbPath, answered)).toEqual({ answered: answered.length, missing: [], doubled: [] });
  });
});

/** The prefix of the survivor's own segment names (`seg-<instance id>-`), read from its start-up log. */
function ownPrefix(gw: GatewayProcess): string {
  const m = gw.stdout.join('').match(/"instance":"(inst_[0-9a-f]+)"/);
  if (!m) throw new Error('the gateway did not log its instance id');
  return `seg-${m[1]}-`;
}
