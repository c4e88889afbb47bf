/**
 * A TCP proxy in front of the machine's Redis, for outage tests: stopping it drops every connection (Redis
 * "down" without touching the shared server), starting it again on the same port brings it back, and a
 * delay makes Redis slow (commands still run, in order, only late).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface RedisProxy {
  url: string;
  /** Client-to-Redis bytes are held this long before they go on (0: forwarded at once). */
  delayMs: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startRedisProxy(target = { host: '127.0.0.1', port: 6379 }): Promise<RedisProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const proxy: RedisProxy = {
    url: '',
    delayMs: 0,
    async start() {
      const s = createServer((client) => {
        const upstream = connect(target.port, target.host);
        sockets.add(client);
        sockets.add(upstream);
        client.on('data', (chunk) => {
          if (proxy.delayMs > 0) setTimeout(() => upstream.write(chunk), proxy.delayMs);
          else upstream.write(chunk);
        });
        upstream.pipe(client);
        const drop = (): void => {
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
