/**
 * The bus between the worker threads of `serve --workers N` (issue 12): a BroadcastChannel, which the
 * runtime delivers to every other channel object of the same name in the process and never to the one
 * that posted (HTML "BroadcastChannel", as Node implements it: test/contract/bus-broadcast.test.ts checks
 * it). No service, no socket; a message is a structured clone hop between threads, microseconds.
 *
 * Messages travel in the same JSON envelope as the Redis bus and are decoded with the same checks
 * (redis/bus-envelope.ts), so a worker of another build, or anything else posting on the channel, is
 * dropped rather than half-applied. The channel name carries the launch's id: two gateways in one process
 * (tests) never hear each other.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { Bus, BusMessage } from '../core/coordination/bus.js';
import { decodeEnvelope, encodeEnvelope } from './redis/bus-envelope.js';

export const broadcastChannelName = (launchId: string): string => `switchboard-bus:${launchId}`;

/** `sender`: this thread's name in the envelope (worker index), for logs and tests. */
export function createBroadcastBus(channelName: string, sender: string): Bus {
  const channel = new BroadcastChannel(channelName);
  // The gateway's listeners keep its thread alive; an idle channel must not, or a drained worker never exits.
  channel.unref();
  const listeners = new Set<(message: BusMessage) => void>();
  channel.onmessage = (event: unknown) => {
    const data = (event as { data?: unknown }).data;
    const envelope = typeof data === 'string' ? decodeEnvelope(data) : null;
    if (!envelope) return;
    for (const listener of listeners) listener(envelope.message);
  };
  let closed = false;
  return {
    publish(message) {
      if (!closed) channel.postMessage(encodeEnvelope({ from: sender, message }));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    // Threads of one process: a message is never lost, so there is nothing to catch up on.
    onResubscribed: () => () => undefined,
    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      channel.close();
    },
  };
}
