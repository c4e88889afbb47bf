/**
 * Whether `serve` can listen where it is told to, asked before it changes anything shared: a start that
 * syncs its config file into the store and only then fails to listen (the port of a running replica) had
 * already rewritten the deployment's shared catalog, and the running replicas served its endpoints (found
 * from outside). A port taken between this check and the real listen still fails the start, after the sync.
 */
import { createServer } from 'node:net';

/** Resolves when host:port can be listened on now (port 0 always can); rejects as the real listen does. */
export function checkCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', () => reject(new Error(`cannot listen on ${host}:${port}: address in use or not available`)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
