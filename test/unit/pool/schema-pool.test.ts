/**
 * The schema threads' lanes (src/pool/schema-pool.ts) are fair between tenants: an outside probe had one
 * project's 4-6 slow invocations (each held the lane's one thread until its 2 s deadline) delay another
 * project's trivial one by 7.65-11.6 s. Real threads, from dist/ (a worker thread has no TypeScript
 * loader). Every assertion is on the order in which tasks settle, never on how long they took: the slow
 * arguments take many times the deadline on any machine, and a trivial check on a started thread takes
 * milliseconds, so the orders below hold however busy the machine is.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type * as SchemaPoolModule from '../../../src/pool/schema-pool.js';

const { createSchemaPool } = (await import(pathToFileURL(join(process.cwd(), 'dist/src/pool/schema-pool.js')).href)) as typeof SchemaPoolModule;
type SchemaPool = SchemaPoolModule.SchemaPool;

const DEADLINE_MS = 1500;
const TRIVIAL = { type: 'object', properties: { text: { type: 'string' } } };
const UNIQUE = { type: 'object', properties: { items: { type: 'array', uniqueItems: true } } };
// ajv compares the items pairwise (quadratic): 30,000 objects (~400 KB) take ~14 s on this machine's
// cores, so several deadlines on any machine. The thread hangs until it is terminated.
const SLOW = { items: Array.from({ length: 30_000 }, (_, a) => ({ a })) };

let pool: SchemaPool | null = null;

afterEach(async () => {
  await pool?.close();
  pool = null;
});

function open(options: SchemaPoolModule.SchemaPoolOptions): SchemaPool {
  pool = createSchemaPool(options);
  return pool;
}

/** How tasks settled, in order: `name:verdict` or `name:error code` (invalid_body past the deadline). */
function settlements() {
  const events: string[] = [];
  const track = (name: string, task: Promise<unknown>): Promise<void> =>
    task.then(
      (value) => void events.push(`${name}:${value === null ? 'usable' : ((value as { kind?: string }).kind ?? 'unusable')}`),
      (err: unknown) => void events.push(`${name}:${(err as { code?: string }).code ?? (err as Error).message}`),
    );
  return { events, track };
}

/**
 * Starts both threads of the lane (two tenants' tasks at once) and loads ajv on them: the orders asserted
 * below then never rest on how fast a thread starts.
 */
async function warm(p: SchemaPool): Promise<void> {
  await Promise.all([p.validator.validate(TRIVIAL, {}, 'proj_warm1'), p.validator.validate(TRIVIAL, {}, 'proj_warm2')]);
}

describe('schema lanes are fair between tenants', () => {
  it("answers a tenant's trivial check on a free thread while another's slow ones wait out their deadlines", async () => {
    const p = open({ validateDeadlineMs: DEADLINE_MS, validateThreads: 2 });
    await warm(p);
    const { events, track } = settlements();
    const b = [0, 1, 2].map((i) => track(`B${i}`, p.validator.validate(UNIQUE, SLOW, 'proj_b')));
    const a = track('A', p.validator.validate(TRIVIAL, { text: 'hi' }, 'proj_a'));
    await Promise.all([a, b[0]]);
    // One lane in arrival order answered A only after all three of B's deadlines.
    expect(events.slice(0, 2)).toEqual(['A:valid', 'B0:invalid_body']);
  });

  it('refuses arguments past the deadline as 400 invalid_body and replaces the thread that hung', async () => {
    const p = open({ validateDeadlineMs: DEADLINE_MS, validateThreads: 1 });
    await expect(p.validator.validate(UNIQUE, SLOW, 'proj_b')).rejects.toMatchObject({
      code: 'invalid_body',
      param: 'arguments',
      message: `Checking arguments against the input_schema did not finish within ${DEADLINE_MS} ms; send smaller arguments.`,
    });
    // The lane's one thread was terminated: a new one answers.
    await expect(p.validator.validate(TRIVIAL, { text: 'hi' }, 'proj_b')).resolves.toEqual({ kind: 'valid' });
  });

  it("runs a tenant's tasks one at a time, in order, even with a thread free", async () => {
    const p = open({ validateDeadlineMs: DEADLINE_MS, validateThreads: 2 });
    await warm(p);
    const { events, track } = settlements();
    const tasks = [
      track('A1', p.validator.validate(UNIQUE, SLOW, 'proj_a')),
      track('A2', p.validator.validate(TRIVIAL, { text: 'hi' }, 'proj_a')),
      track('A3', p.validator.validate(TRIVIAL, { text: 3 }, 'proj_a')),
      track('B1', p.validator.validate(TRIVIAL, { text: 'hi' }, 'proj_b')),
    ];
    await Promise.all(tasks);
    // B1 takes the free thread at once; A2 waits for A1 (not for a thread: B1's is free by then), A3 for A2.
    expect(events).toEqual(['B1:valid', 'A1:invalid_body', 'A2:valid', 'A3:invalid']);
  });

  const lanes = {
    invocations: { options: { validateThreads: 1 }, run: (p: SchemaPool, tenant: string) => p.validator.validate(TRIVIAL, {}, tenant) },
    enrollments: { options: { checkThreads: 1 }, run: (p: SchemaPool, tenant: string) => p.checkSchemas([TRIVIAL], tenant) },
  } as const;

  it.each(Object.keys(lanes) as (keyof typeof lanes)[])('serves the tenants with work queued in turn, one task each (%s)', async (lane) => {
    const { options, run } = lanes[lane];
    const p = open(options);
    const { events, track } = settlements();
    // Z's task starts at once on the lane's one thread, which answers no sooner than the next turn of the
    // event loop: every other task is queued by then, A's three before B's two before C's one.
    const order: [string, string][] = [['Z', 'proj_z'], ['a1', 'proj_a'], ['a2', 'proj_a'], ['a3', 'proj_a'], ['b1', 'proj_b'], ['b2', 'proj_b'], ['c1', 'proj_c']];
    await Promise.all(order.map(([name, tenant]) => track(name, run(p, tenant))));
    expect(events.map((e) => e.split(':')[0])).toEqual(['Z', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it("close() rejects a tenant's running and queued tasks, and later ones", async () => {
    const p = open({ validateDeadlineMs: DEADLINE_MS, validateThreads: 2 });
    await warm(p);
    const { events, track } = settlements();
    const b = [track('B1', p.validator.validate(UNIQUE, SLOW, 'proj_b')), track('B2', p.validator.validate(UNIQUE, SLOW, 'proj_b'))];
    await track('A', p.validator.validate(TRIVIAL, { text: 'hi' }, 'proj_a'));
    // B1 runs, B2 waits its turn behind it.
    await p.close();
    await Promise.all(b);
    expect(events[0]).toBe('A:valid');
    expect(events.slice(1).sort()).toEqual(['B1:unavailable', 'B2:unavailable']);
    await expect(p.validator.validate(TRIVIAL, {}, 'proj_a')).rejects.toMatchObject({ code: 'unavailable', message: 'Arguments could not be checked: the schema threads are closed; retry.' });
    await expect(p.checkSchemas([TRIVIAL], 'proj_a')).rejects.toThrow('the schema threads are closed');
  });
});
