/**
 * The ioredis connections of the coordination layer, with the options that make an outage cheap: no
 * offline queue on the connections that send commands (a down Redis answers at once, it does not hold
 * the request until the next reconnect), one retry per command, a per-command timeout, and reconnection
 * every second at most, forever, in the background.
 */
import { Redis } from 'ioredis';

/** Reconnect backoff: 100 ms, 200 ms, ... capped at 1 s, so a restarted Redis is used again within a second. */
const MAX_RECONNECT_DELAY_MS = 1000;

export interface ConnectionOptions {
  /** Shown in CLIENT LIST: `switchboard-limits`, `switchboard-bus-pub`, ... */
  readonly name: string;
  readonly commandTimeoutMs: number;
  /** false for command connections; the subscriber keeps it so its SUBSCRIBE waits for the connection. */
  readonly offlineQueue: boolean;
}

export function openRedis(url: string, options: ConnectionOptions): Redis {
  const redis = new Redis(url, {
    connectionName: options.name,
    enableOfflineQueue: options.offlineQueue,
    // A queued SUBSCRIBE must survive any number of reconnects; a command fails after one.
    maxRetriesPerRequest: options.offlineQueue ? null : 1,
    commandTimeout: options.offlineQueue ? undefined : options.commandTimeoutMs,
    // A command left unanswered by a dropped connection is not sent again on the next one: its request was
    // answered meanwhile (refused, or admitted on this replica's share) and a token charge in it was counted
    // locally, so a resend would count it twice (issue 32). The subscriber resubscribes on its own.
    autoResendUnfulfilledCommands: options.offlineQueue,
    connectTimeout: Math.max(1000, options.commandTimeoutMs * 4),
    retryStrategy: (times) => Math.min(times * 100, MAX_RECONNECT_DELAY_MS),
    // Commands issued in one event-loop turn leave in one write (flushed at setImmediate, order kept): a
    // write to a loopback socket cost the gateway ~50 us of CPU on the bench machine, and a turn issued
    // three of them (admission, token charge, the bus's budget charge). bench/redis-limiter.ts measures it.
    enableAutoPipelining: !options.offlineQueue,
    // The library identifies itself with CLIENT SETINFO, which older servers refuse with an error reply.
    disableClientInfo: true,
  });
  // Without a listener ioredis prints every failed reconnect to stderr; the owners log transitions.
  redis.on('error', () => undefined);
  return redis;
}

/** Resolves true once the connection is ready, false after `ms` (the connection keeps trying). */
export function whenReady(redis: Redis, ms: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = (): void => done(true);
    const timer = setTimeout(() => done(false), ms);
    redis.on('ready', onReady);
  });
}

/** The URL without its password, for logs. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'redis://(unparsable url)';
  }
}

/** What to log about a failed command: its message, never a stack. */
export function causeOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Closes without waiting for a Redis that may be gone: QUIT when connected, a disconnect otherwise. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // fall through to the disconnect
    }
  }
  redis.disconnect();
}
