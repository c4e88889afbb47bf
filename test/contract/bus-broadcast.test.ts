/**
 * The bus contract over BroadcastChannel (the worker threads of `serve --workers N`): two peers as two
 * worker threads would be, each on a fresh channel name. A channel object never receives what it posted,
 * which is the "never its own publisher" case.
 */
import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import { broadcastChannelName, createBroadcastBus } from '../../src/coordination/broadcast-bus.js';
import { busContract } from './bus-contract.js';

busContract('BroadcastChannel between worker threads', async () => {
  const name = broadcastChannelName(randomUUID());
  const a = createBroadcastBus(name, '0');
  const b = createBroadcastBus(name, '1');
  const foreign = new BroadcastChannel(name);
  return {
    a,
    b,
    injectRaw: async (raw) => foreign.postMessage(raw),
    async close() {
      foreign.close();
      await Promise.all([a.close(), b.close()]);
    },
  };
});
