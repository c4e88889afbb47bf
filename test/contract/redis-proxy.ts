/**
 * A TCP proxy in front of the machine's Redis, for outage tests: stopping it drops every connection (Redis
 * "down" without touching the shared server), starting it again on the same port brings it back, and a
 * delay makes Redis slow (commands still run, in order, only late; a command sent after the delay is
 * lifted still waits behind the ones held).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface RedisProxy {
  url: string;
  /** Client-to-Redis bytes are held this long before they go on (0: forwarded at once). */
  delayMs: number;
  /** How many chunks are held back by the delay now, over every connection. */
  held(): number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startRedisProxy(target = { host: '127.0.0.1', port: 6379 }): Promise<RedisProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const holds = new Set<readonly unknown[]>();
  const proxy: RedisProxy = {
    url: '',
    delayMs: 0,
    held: () => [...holds].reduce((n, h) => n + h.length, 0),
    async start() {
      const s = createServer((client) => {
        const upstream = connect(target.port, target.host);
        sockets.add(client);
        sockets.add(upstream);
        // Bytes leave in the order they came, whatever the delay was when each came: a TCP stream never
        // reorders, and a command overtaking an earlier one would pair replies with the wrong commands.
        const held: { chunk: Buffer; due: number }[] = [];
        holds.add(held);
        let timer: NodeJS.Timeout | null = null;
        const drain = (): void => {
          timer = null;
          while (held.length > 0 && (held[0] as { due: number }).due <= Date.now()) upstream.write((held.shift() as { chunk: Buffer }).chunk);
          if (held.length > 0) timer = setTimeout(drain, Math.max(1, (held[0] as { due: number }).due - Date.now()));
        };
        client.on('data', (chunk: Buffer) => {
          if (proxy.delayMs <= 0 && held.length === 0) {
            upstream.write(chunk);
            return;
          }
          held.push({ chunk, due: Math.max(Date.now() + proxy.delayMs, held.at(-1)?.due ?? 0) });
          timer ??= setTimeout(drain, Math.max(1, (held[0] as { due: number }).due - Date.now()));
        });
        upstream.pipe(client);
        const drop = (): void => {
          if (timer) clearTimeout(timer);
          held.length = 0;
          holds.delete(held);
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('close', drop).on('error', drop);
        upstream.on('close', drop).on('error', drop);
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => resolve());
      });
      const address = s.address();
      port = typeof address === 'object' && address ? address.port : port;
      proxy.url = `redis://127.0.0.1:${port}`;
      server = s;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      const s = server;
      server = null;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
  await proxy.start();
  return proxy;
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const address = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 1;
}
