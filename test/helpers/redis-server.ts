/**
 * A private redis-server for tests that stop and restart Redis (issue 12's "Redis restarted mid-load"):
 * its own port and no persistence, so the machine's shared Redis (127.0.0.1:6379) is never touched.
 * A missing binary is a loud failure: `.ci/run` installs redis-server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { trackChild } from './child-registry.js';
import { freePort } from './processes.js';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
}

function launch(port: number): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const proc = trackChild(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    const timer = setTimeout(() => reject(new Error(`redis-server on port ${port} not ready after 10 s:\n${out}`)), 10_000);
    proc.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`redis-server could not start (${err.message}); install it (apt-get install redis-server), as .ci/run does`));
    });
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(proc);
      }
    });
  });
}

const stopped = (proc: ChildProcess): Promise<void> =>
  proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise((resolve) => proc.once('exit', () => resolve()));

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let proc = await launch(port);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      proc.kill('SIGKILL');
      await stopped(proc);
    },
    async restart() {
      proc = await launch(port);
    },
  };
}
