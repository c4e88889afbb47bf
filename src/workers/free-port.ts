/**
 * A port free on `host` now, for `serve --workers N --port 0`: every worker must listen on the same port,
 * so the main thread picks one before starting them (the kernel's choice for one listener, released at
 * once). Another process could take it in between; the workers' start then fails and the launch says so.
 */
import { createServer } from 'node:net';

export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error(`no free port on ${host}`))));
    });
  });
}
