/**
 * What every implementation of the bus port must do between two peers (issue 12): a message reaches the
 * other peer and never its own publisher, every message kind arrives whole, and a malformed message is
 * dropped without stopping delivery. `injectRaw` puts bytes on the transport as a foreign publisher would;
 * an implementation whose transport carries no bytes (structured clone) declares that case skipped.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../../src/core/coordination/bus.js';

export interface BusPeers {
  readonly a: Bus;
  readonly b: Bus;
  injectRaw?(raw: string): Promise<void>;
  close(): Promise<void>;
}

const CHARGE: BusMessage = { kind: 'budget_charge', projectId: 'proj_a', endpointId: 'ep_1', workspaceId: null, tokens: 120, costNanos: 3_500, at: 1_700_000_000_000 };
const AFFINITY: BusMessage = { kind: 'affinity', key: 'proj_a/*/conv_1', endpointId: 'ep_2', at: 1_700_000_000_001 };
const INVALIDATE: BusMessage = { kind: 'invalidate', what: 'router' };

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error(`no delivery within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** `rawInjection: false` declares the malformed-message case skipped (a transport that carries no bytes). */
export function busContract(name: string, makePeers: () => Promise<BusPeers>, declared: { rawInjection: boolean } = { rawInjection: true }): void {
  describe(`bus port contract: ${name}`, () => {
    let peers: BusPeers;
    let atA: BusMessage[];
    let atB: BusMessage[];
    beforeEach(async () => {
      peers = await makePeers();
      atA = [];
      atB = [];
      peers.a.subscribe((m) => atA.push(m));
      peers.b.subscribe((m) => atB.push(m));
    });
    afterEach(async () => {
      await peers.close();
    });

    it('delivers every kind of message to the other peer, whole', async () => {
      for (const m of [INVALIDATE, CHARGE, AFFINITY]) peers.a.publish(m);
      await until(() => atB.length === 3);
      expect(atB).toEqual([INVALIDATE, CHARGE, AFFINITY]);
    });

    it('never delivers a message to its own publisher', async () => {
      peers.a.publish(CHARGE);
      await until(() => atB.length === 1);
      // b's answer is published after a's message was delivered: by the time a has it, a's own would be there too.
      peers.b.publish(AFFINITY);
      await until(() => atA.length === 1);
      expect(atA).toEqual([AFFINITY]);
      expect(atB).toEqual([CHARGE]);
    });

    it('stops delivering to a listener once it unsubscribed', async () => {
      const late: BusMessage[] = [];
      const unsubscribe = peers.b.subscribe((m) => late.push(m));
      unsubscribe();
      peers.a.publish(INVALIDATE);
      await until(() => atB.length === 1);
      expect(late).toEqual([]);
    });

    it.skipIf(!declared.rawInjection)('drops a malformed message and keeps delivering the next ones', async () => {
      const inject = peers.injectRaw;
      if (!inject) throw new Error('rawInjection declared but the peers have no injectRaw');
      await inject('not json');
      await inject(JSON.stringify({ from: 'someone', message: { kind: 'budget_charge', projectId: 'proj_a', tokens: 'many' } }));
      await inject(JSON.stringify({ from: 'someone', message: { kind: 'invalidate', what: 'everything' } }));
      peers.a.publish(INVALIDATE);
      await until(() => atB.length >= 1);
      expect(atB).toEqual([INVALIDATE]);
      expect(atA).toEqual([]);
    });
  });
}
