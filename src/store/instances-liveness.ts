/**
 * Whether a registered gateway instance is dead (store/instances-registry.ts). The heartbeat lease decides
 * in every case; on the same machine the process table answers sooner, so that a restart after a SIGKILL
 * does not wait out the lease before it recovers the killed process's work.
 *
 * Only a "dead" answer is acted on (its work is failed or handed to another instance), so the probes are
 * used only where a wrong "dead" cannot come out of them: a pid is probed only in the same pid namespace of
 * the same host (containers with `--network host` share the host name, not the pids), and an instance with
 * our own pid is dead only if it started before this process did (it was a previous process that had our
 * pid; our sibling worker threads, which share it, all started after).
 */
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

export interface InstanceSeen {
  readonly id: string;
  readonly pid: number;
  readonly host: string;
  readonly pidScope: string;
  readonly startedAt: number;
  readonly heartbeatAt: number;
}

/** Where this instance runs: what the probes need to know to be trusted. */
export interface Whereabouts {
  readonly host: string;
  readonly pidScope: string;
  readonly pid: number;
  /** When this process started (wall clock, ms): the same for every worker thread of it. */
  readonly processStartedAt: number;
}

export function whereabouts(): Whereabouts {
  let pidScope = '';
  try {
    // Linux: `pid:[4026531836]`, one value per pid namespace. Elsewhere '' (no namespaces to tell apart).
    pidScope = readlinkSync('/proc/self/ns/pid');
  } catch {
    // not Linux
  }
  return { host: hostname(), pidScope, pid: process.pid, processStartedAt: Date.now() - process.uptime() * 1000 };
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function isDead(other: InstanceSeen, self: Whereabouts, now: number, leaseMs: number, alive: (pid: number) => boolean = processAlive): boolean {
  if (now - other.heartbeatAt > leaseMs) return true;
  if (other.host !== self.host || other.pidScope !== self.pidScope) return false;
  if (other.pid === self.pid) return other.startedAt < self.processStartedAt;
  return !alive(other.pid);
}
