import { Worker } from 'node:worker_threads';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { WorkerStartError } from '../../../src/workers/gateway-thread.js';
import { MAX_DEATHS, WorkerSupervisor } from '../../../src/workers/worker-supervisor.js';

/** A stand-in for gateway-worker.ts speaking its protocol: listens (or fails), dies on cue, drains on request. */
const FAKE_GATEWAY = `
  const { parentPort, workerData } = require('node:worker_threads');
  if (workerData.fail) {
    parentPort.postMessage({ kind: 'failed', message: 'cannot listen', exitCode: 2 });
  } else {
    const listen = () => parentPort.postMessage({ kind: 'listening', url: 'http://127.0.0.1:1' });
    if (workerData.listenAfterMs === undefined) listen(); else setTimeout(listen, workerData.listenAfterMs);
    const timer = workerData.dieAfterMs === undefined ? setInterval(() => undefined, 1000) : setTimeout(() => { throw new Error('boom'); }, workerData.dieAfterMs);
    parentPort.on('message', () => { clearInterval(timer); clearTimeout(timer); parentPort.postMessage({ kind: 'stopped' }); parentPort.close(); });
  }`;

interface Behaviour {
  readonly fail?: boolean;
  readonly dieAfterMs?: number;
  readonly listenAfterMs?: number;
}

function harness(behaviourOf: (index: number, spawned: number) => Behaviour) {
  const lines: { msg: string; worker?: number; err?: { message: string } }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  let spawned = 0;
  let stopped = 0;
  const spawn = (index: number): Worker => new Worker(FAKE_GATEWAY, { eval: true, workerData: behaviourOf(index, spawned++) });
  const supervisor = new WorkerSupervisor(2, spawn, () => false, logger, () => void (stopped += 1));
  return { supervisor, lines, spawned: () => spawned, stopped: () => stopped };
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('WorkerSupervisor', () => {
  it('replaces a worker that dies once the launch is up, logging its error', async () => {
    const h = harness((index, spawned) => (index === 0 && spawned === 0 ? { dieAfterMs: 50 } : {}));
    await h.supervisor.startAll();
    await until(() => h.lines.some((l) => l.msg === 'worker replaced'));
    expect(h.spawned()).toBe(3);
    expect(h.lines.find((l) => l.msg === 'worker died')).toMatchObject({ worker: 0, err: { message: 'boom' } });
    await h.supervisor.stop();
    expect(h.stopped()).toBe(1);
  });

  it('replaces a worker that listened and died while another was still starting', async () => {
    const h = harness((index, spawned) => (index === 0 ? { listenAfterMs: 300 } : spawned === 1 ? { dieAfterMs: 10 } : {}));
    await h.supervisor.startAll();
    await until(() => h.lines.some((l) => l.msg === 'worker replaced'));
    expect(h.spawned()).toBe(3);
    expect(h.lines.find((l) => l.msg === 'worker died')).toMatchObject({ worker: 1, err: { message: 'boom' } });
    await h.supervisor.stop();
    expect(h.stopped()).toBe(1);
  });

  it(`gives up, draining the others, after ${MAX_DEATHS} deaths within the window`, async () => {
    const h = harness((index) => (index === 1 ? { dieAfterMs: 20 } : {}));
    await h.supervisor.startAll();
    expect(await h.supervisor.gaveUp).toBe(1);
    expect(h.lines.filter((l) => l.msg === 'worker died')).toHaveLength(MAX_DEATHS);
    expect(h.stopped()).toBe(1);
  });

  it('fails the launch with the error of a worker that cannot start, after draining the others', async () => {
    const h = harness((index) => (index === 1 ? { fail: true } : {}));
    const failure = await h.supervisor.startAll().then(
      () => null,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkerStartError);
    expect(failure).toMatchObject({ message: 'cannot listen', exitCode: 2 });
    expect(h.stopped()).toBe(1);
    expect(h.spawned()).toBe(2);
  });
});
