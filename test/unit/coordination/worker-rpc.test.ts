/**
 * The request/answer channel between the workers of `serve --workers N` (src/coordination/worker-rpc.ts)
 * and the process-wide scrape built on it (src/metrics-workers.ts). BroadcastChannel objects of one name
 * in one thread hear each other, so "workers" here are channel objects of this test's thread.
 */
import { randomUUID } from 'node:crypto';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkerRpc, type WorkerRpc } from '../../../src/coordination/worker-rpc.js';
import { workersMetrics } from '../../../src/metrics-workers.js';

const open: WorkerRpc[] = [];
afterEach(() => {
  for (const rpc of open.splice(0)) rpc.close();
});

/** Workers 0..present-1 of a launch of `workers`: the others never answer (dead, being replaced). */
function launch(workers: number, present: number): WorkerRpc[] {
  const name = `test-rpc:${randomUUID()}`;
  const rpcs = Array.from({ length: present }, (_, i) => createWorkerRpc(name, i, workers));
  open.push(...rpcs);
  return rpcs;
}

describe('worker RPC', () => {
  it('asks one worker and gets its answer; nobody else answers for it', async () => {
    const [a, b, c] = launch(3, 3) as [WorkerRpc, WorkerRpc, WorkerRpc];
    b.handle('who', (p) => `b got ${String(p)}`);
    c.handle('who', () => 'c');
    expect(await a.call(1, 'who', 'x', 1000)).toEqual({ answered: true, value: 'b got x' });
  });

  it('gathers the others within the deadline and counts who did not answer', async () => {
    const [a, b, c] = launch(4, 3) as [WorkerRpc, WorkerRpc, WorkerRpc];
    b.handle('n', () => 1);
    c.handle('n', async () => 2);
    const started = Date.now();
    const { answers, missing } = await a.gather('n', null, 200);
    expect(answers.sort()).toEqual([1, 2]);
    expect(missing).toBe(1);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('treats a handler that throws, an absent worker and itself as not answering', async () => {
    const [a, b] = launch(3, 2) as [WorkerRpc, WorkerRpc];
    b.handle('boom', () => {
      throw new Error('no');
    });
    expect(await a.call(1, 'boom', null, 100)).toEqual({ answered: false });
    expect(await a.call(2, 'boom', null, 100)).toEqual({ answered: false });
    expect(await a.call(0, 'boom', null, 100)).toEqual({ answered: false });
    expect(await a.call(7, 'boom', null, 100)).toEqual({ answered: false });
  });
});

describe('the workers metrics scrape', () => {
  function registryCounting(n: number): Registry {
    const registry = new Registry();
    new Counter({ name: 'switchboard_requests_total', help: 'h', labelNames: ['family'], registers: [registry] }).inc({ family: 'models' }, n);
    return registry;
  }

  it('adds every worker counter and reports no missing worker', async () => {
    const [a, b, c] = launch(3, 3) as [WorkerRpc, WorkerRpc, WorkerRpc];
    const scrape = workersMetrics(registryCounting(5), a, 1000);
    workersMetrics(registryCounting(7), b, 1000);
    workersMetrics(registryCounting(11), c, 1000);
    const text = await scrape();
    expect(text).toMatch(/^switchboard_requests_total\{family="models"\} 23$/m);
    expect(text).toMatch(/^switchboard_metrics_workers_missing 0$/m);
  });

  it('answers with what arrived by the deadline and says how many workers are missing', async () => {
    const [a, b] = launch(3, 2) as [WorkerRpc, WorkerRpc];
    const scrape = workersMetrics(registryCounting(5), a, 100);
    workersMetrics(registryCounting(7), b, 100);
    const text = await scrape();
    expect(text).toMatch(/^switchboard_requests_total\{family="models"\} 12$/m);
    expect(text).toMatch(/^switchboard_metrics_workers_missing 1$/m);
  });
});
