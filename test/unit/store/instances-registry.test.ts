/**
 * The instance registry (issue 12): who is a dead instance, and what a beat does about it. Only a "dead"
 * answer is acted on (a sibling's work is failed or taken over), so each probe is checked for never
 * saying dead about a live sibling.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { isDead, type InstanceSeen, type Whereabouts } from '../../../src/store/instances-liveness.js';
import { createInstanceRegistry, instanceLeaseMs, INSTANCE_LEASE_MS, type InstanceRegistry } from '../../../src/store/instances-registry.js';

const LEASE = 15_000;
const NOW = 1_800_000_000_000;
const HERE: Whereabouts = { host: 'node-1', pidScope: 'pid:[1]', pid: 100, processStartedAt: NOW - 60_000 };
const seen = (over: Partial<InstanceSeen>): InstanceSeen => ({ id: 'inst_0', pid: 200, host: 'node-1', pidScope: 'pid:[1]', startedAt: NOW - 30_000, heartbeatAt: NOW - 1_000, ...over });
const alive = (): boolean => true;
const gone = (): boolean => false;

describe('a registered instance is dead', () => {
  it('when its heartbeat is older than the lease, wherever it runs', () => {
    expect(isDead(seen({ host: 'node-2', heartbeatAt: NOW - LEASE - 1 }), HERE, NOW, LEASE, alive)).toBe(true);
    expect(isDead(seen({ host: 'node-2', heartbeatAt: NOW - LEASE }), HERE, NOW, LEASE, alive)).toBe(false);
  });

  it('at once when its process is gone from this machine and pid namespace', () => {
    expect(isDead(seen({}), HERE, NOW, LEASE, gone)).toBe(true);
    expect(isDead(seen({}), HERE, NOW, LEASE, alive)).toBe(false);
  });

  it('never through a pid probe of another host or another pid namespace (containers sharing a host name)', () => {
    expect(isDead(seen({ host: 'node-2' }), HERE, NOW, LEASE, gone)).toBe(false);
    expect(isDead(seen({ pidScope: 'pid:[2]' }), HERE, NOW, LEASE, gone)).toBe(false);
  });

  it('with our own pid only if it started before this process (a previous process); sibling worker threads are alive', () => {
    expect(isDead(seen({ pid: HERE.pid, startedAt: HERE.processStartedAt - 5_000 }), HERE, NOW, LEASE, alive)).toBe(true);
    expect(isDead(seen({ pid: HERE.pid, startedAt: HERE.processStartedAt + 50 }), HERE, NOW, LEASE, alive)).toBe(false);
  });
});

describe('the lease', () => {
  it('is 15 s unless SWITCHBOARD_INSTANCE_LEASE_MS names a usable one (tests only)', () => {
    expect(instanceLeaseMs({})).toBe(INSTANCE_LEASE_MS);
    expect(instanceLeaseMs({ SWITCHBOARD_INSTANCE_LEASE_MS: '1500' })).toBe(1500);
    expect(instanceLeaseMs({ SWITCHBOARD_INSTANCE_LEASE_MS: '10' })).toBe(INSTANCE_LEASE_MS);
    expect(instanceLeaseMs({ SWITCHBOARD_INSTANCE_LEASE_MS: 'soon' })).toBe(INSTANCE_LEASE_MS);
  });
});

describe('the registry on one store', () => {
  const opened: { db: Db; registries: InstanceRegistry[] }[] = [];
  afterEach(() => {
    for (const o of opened.splice(0)) {
      for (const r of o.registries) r.close();
      o.db.close();
    }
  });
  function store(): { dbPath: string; db: Db; registries: InstanceRegistry[] } {
    const dbPath = join(mkdtempSync(join(tmpdir(), 'switchboard-instances-')), 'store.db');
    const o = { db: openDatabase(dbPath), registries: [] as InstanceRegistry[] };
    opened.push(o);
    return { dbPath, ...o };
  }
  const elsewhere: Whereabouts = { host: 'node-2', pidScope: 'pid:[9]', pid: 4242, processStartedAt: 0 };
  const quiet = { onError: (m: string) => expect.fail(m), onWarn: () => undefined };

  it('registers each instance, counts the live ones, deletes a dead one at the next start, and a graceful close deletes its own row', () => {
    const s = store();
    const staleAt = Date.now() - LEASE - 1;
    const stale = createInstanceRegistry({ ...s, ...quiet, leaseMs: LEASE, where: elsewhere, now: () => staleAt });
    const live = createInstanceRegistry({ ...s, ...quiet, leaseMs: LEASE, where: elsewhere });
    s.registries.push(stale, live);
    const starting = createInstanceRegistry({ ...s, ...quiet, leaseMs: LEASE });
    s.registries.push(starting);
    expect(starting.isRegistered(stale.id)).toBe(false);
    expect(starting.isRegistered(live.id)).toBe(true);
    expect(starting.isRegistered(starting.id)).toBe(true);
    // What each replica's share of a limit is cut by while Redis is down (issue 32): the live ones, itself included.
    expect(starting.liveInstances()).toBe(2);
    live.close();
    expect(starting.isRegistered(live.id)).toBe(false);
  });

  it('tells its recoverers when a beat found an instance dead', async () => {
    const s = store();
    const watcher = createInstanceRegistry({ ...s, ...quiet, leaseMs: 300 });
    s.registries.push(watcher);
    const sweeps: string[][] = [];
    watcher.onSweep((sweep) => sweeps.push([...sweep.reaped]));
    let clock = Date.now();
    const hung = createInstanceRegistry({ ...s, ...quiet, leaseMs: 60_000, where: elsewhere, now: () => clock });
    s.registries.push(hung);
    clock -= 1_000; // its beats stop moving: from now on it looks hung
    for (const until = Date.now() + 10_000; !sweeps.some((s) => s.includes(hung.id)) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
    expect(sweeps).toContainEqual([hung.id]);
    expect(watcher.isRegistered(hung.id)).toBe(false);
  });

  it('registers again, and says so, when its own row was deleted while it was alive (a stalled event loop)', async () => {
    const s = store();
    const warnings: string[] = [];
    const registry = createInstanceRegistry({ ...s, onError: (m) => expect.fail(m), onWarn: (m) => warnings.push(m), leaseMs: 300 });
    s.registries.push(registry);
    s.db.prepare('DELETE FROM gateway_instances WHERE id = ?').run(registry.id);
    await new Promise((r) => setTimeout(r, 250));
    expect(registry.isRegistered(registry.id)).toBe(true);
    expect(warnings.join('\n')).toContain('judged dead');
  });
});
