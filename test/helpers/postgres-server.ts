/**
 * A private PostgreSQL cluster for the tests that stop and restart PostgreSQL (issue 12: "with Redis or
 * PostgreSQL down, the gateway keeps serving what it safely can"): its own data folder and port, so the
 * machine's shared server (127.0.0.1:5432) is never touched. PostgreSQL refuses to run as root, so when
 * the tests run as root the cluster belongs to the `postgres` user (runuser). Missing binaries are a loud
 * failure naming the package.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.js';

const run = promisify(execFile);

export interface PostgresServer {
  readonly port: number;
  /** The `postgres` database of the cluster, as the superuser, trust auth. */
  readonly url: string;
  /** Stops it at once (immediate mode: connections are cut, as a crash or a network loss would). */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the same data. */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort() : [];
  const version = versions.at(-1);
  if (version === undefined) throw new Error('PostgreSQL server binaries are missing (/usr/lib/postgresql/<version>/bin): apt-get install postgresql');
  return join(root, version, 'bin');
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

async function ownerOf(): Promise<Owner | null> {
  if (process.getuid?.() !== 0) return null;
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(stdout.trim()), gid: Number(gid.trim()) };
}

/** Runs a PostgreSQL binary as the cluster's owner. */
async function asOwner(owner: Owner | null, command: string, args: string[]): Promise<void> {
  if (owner === null) await run(command, args);
  else await run('runuser', ['-u', 'postgres', '--', command, ...args]);
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = binDir();
  const owner = await ownerOf();
  const dir = mkdtempSync(join(tmpdir(), 'sb-pg-'));
  const data = join(dir, 'data');
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chmodSync(dir, 0o700);
  }
  await asOwner(owner, join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const conf = `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\nfull_page_writes = off\n`;
  writeFileSync(join(data, 'postgresql.auto.conf'), conf);
  if (owner) chownSync(join(data, 'postgresql.auto.conf'), owner.uid, owner.gid);
  const ctl = (args: string[]): Promise<void> => asOwner(owner, join(bin, 'pg_ctl'), ['-D', data, ...args]);
  const start = (): Promise<void> => ctl(['-w', '-t', '20', '-l', join(dir, 'log'), 'start']);
  await start();
  let running = true;
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      if (!running) return;
      await ctl(['-m', 'immediate', '-w', 'stop']);
      running = false;
    },
    async restart() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await ctl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      running = false;
      await new Promise<void>((resolve) => spawn('rm', ['-rf', dir]).once('exit', () => resolve()));
    },
  };
}
