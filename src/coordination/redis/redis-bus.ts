/**
 * The bus port over Redis pub/sub (issue 12): one publisher connection, one subscriber connection, one
 * channel `<prefix>bus`. Delivery is what pub/sub gives, at most once: a message published while this
 * replica's subscriber is reconnecting is lost. Once the subscriber is back and subscribed again, the
 * `onResubscribed` listeners run, so the bus's users reload from the store what a lost message would have
 * told them (bus-wiring.ts: caches, and budget spend from the ledger). A publisher drops its own messages
 * (bus-envelope.ts); a malformed message is logged and dropped; the connections reconnect by themselves.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Bus, BusMessage } from '../../core/coordination/bus.js';
import type { Logger } from '../../log.js';
import { decodeEnvelope, encodeEnvelope } from './bus-envelope.js';
import { causeOf, closeRedis, openRedis, whenReady } from './redis-connection.js';

export interface RedisBusOptions {
  readonly url: string;
  readonly keyPrefix: string;
  readonly commandTimeoutMs: number;
  readonly logger: Logger;
}

export interface RedisBus extends Bus {
  /** This replica's sender id (random per process). */
  readonly senderId: string;
  /** true once both connections are up and the channel is subscribed; false after `ms`. */
  whenReady(ms: number): Promise<boolean>;
}

export function createRedisBus(options: RedisBusOptions): RedisBus {
  const { logger } = options;
  const channel = `${options.keyPrefix}bus`;
  const senderId = randomBytes(8).toString('hex');
  const pub = openRedis(options.url, { name: 'switchboard-bus-pub', commandTimeoutMs: options.commandTimeoutMs, offlineQueue: false });
  // The subscriber keeps its queue: SUBSCRIBE waits for the connection, and is sent again on reconnect.
  const sub = openRedis(options.url, { name: 'switchboard-bus-sub', commandTimeoutMs: options.commandTimeoutMs, offlineQueue: true });
  const listeners = new Set<(message: BusMessage) => void>();
  const resubscribedListeners = new Set<() => void>();
  let subscribed = false;
  /** The subscriber was subscribed, then lost its connection: messages may have been lost since. */
  let lost = false;
  let publishFailing = false;
  let closed = false;

  const subscribing = sub.subscribe(channel).then(
    () => {
      subscribed = true;
    },
    (err: unknown) => logger.warn({ cause: causeOf(err), channel }, 'bus: subscribe failed'),
  );
  sub.on('close', () => {
    if (!closed && subscribed) {
      logger.warn({ channel }, 'bus: subscriber disconnected; messages from other replicas are lost until it reconnects');
      lost = true;
    }
    subscribed = false;
  });
  sub.on('ready', () => {
    // autoResubscribe sent SUBSCRIBE again on the new connection, before this event.
    if (!subscribed) logger.info({ channel }, 'bus: subscribed');
    subscribed = true;
    if (lost && !closed) {
      lost = false;
      // SUBSCRIBE again (a no-op for Redis) to learn when it took effect: whatever the listeners read from
      // the store from then on misses nothing published after it.
      sub.subscribe(channel).then(
        () => caughtUp(),
        (err: unknown) => logger.warn({ cause: causeOf(err), channel }, 'bus: subscribe after reconnect failed'),
      );
    }
  });
  const caughtUp = (): void => {
    if (closed) return;
    logger.info({ channel, listeners: resubscribedListeners.size }, 'bus: subscribed again after a disconnect; reloading what lost messages would have said');
    callEach(resubscribedListeners, [], (err) => logger.error({ err }, 'bus: a resubscribed listener failed'));
  };
  sub.on('message', (from: string, raw: string) => {
    if (from !== channel) return;
    const envelope = decodeEnvelope(raw);
    if (!envelope) {
      logger.warn({ channel, bytes: raw.length }, 'bus: malformed message dropped');
      return;
    }
    if (envelope.from === senderId) return;
    callEach(listeners, [envelope.message], (err) => logger.error({ err, kind: envelope.message.kind }, 'bus: a listener failed'));
  });

  return {
    senderId,
    publish(message) {
      pub.publish(channel, encodeEnvelope({ from: senderId, message })).then(
        () => {
          if (publishFailing) logger.info({ channel }, 'bus: publishing again');
          publishFailing = false;
        },
        (err: unknown) => {
          if (!publishFailing && !closed) logger.warn({ cause: causeOf(err), channel }, 'bus: publish failed; other replicas miss messages until Redis answers');
          publishFailing = true;
        },
      );
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    onResubscribed(listener) {
      resubscribedListeners.add(listener);
      return () => void resubscribedListeners.delete(listener);
    },
    async whenReady(ms) {
      const [pubReady, subReady] = await Promise.all([whenReady(pub, ms), whenReady(sub, ms)]);
      if (!pubReady || !subReady) return false;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([subscribing, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
      return subscribed;
    },
    async close() {
      closed = true;
      listeners.clear();
      resubscribedListeners.clear();
      await Promise.all([closeRedis(pub), closeRedis(sub)]);
    },
  };
}

/** Calls every listener with `args`; one that throws is reported to `failed`, and the others still run. */
function callEach<A extends unknown[]>(listeners: ReadonlySet<(...args: A) => void>, args: A, failed: (err: unknown) => void): void {
  for (const listener of listeners) {
    try {
      listener(...args);
    } catch (err) {
      failed(err);
    }
  }
}
