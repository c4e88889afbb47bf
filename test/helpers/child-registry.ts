/**
 * Every child process a test starts, until it exits. A test that times out never reaches its own
 * `stop()`, and a gateway left running keeps a core busy for every later file (issue 33): the setup file
 * (child-cleanup.ts) kills what is still here after each file's own afterAll hooks, and on exit.
 */
import type { ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();

const running = (proc: ChildProcess): boolean => proc.exitCode === null && proc.signalCode === null;

/** Registers `proc` until it exits; returns it, so a spawn can be wrapped where it is made. */
export function trackChild<T extends ChildProcess>(proc: T): T {
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  return proc;
}

/** SIGKILLs every tracked process still running and waits for each to exit. */
export async function killTrackedChildren(): Promise<number> {
  const left = [...live].filter(running);
  await Promise.all(
    left.map(
      (proc) =>
        new Promise<void>((resolve) => {
          proc.once('exit', () => resolve());
          proc.kill('SIGKILL');
        }),
    ),
  );
  live.clear();
  return left.length;
}

let onExit = false;

/**
 * SIGKILLs what is left when the test process exits (nothing can be awaited then). Registered once per
 * process: test files share their worker process (vitest.config.ts `isolate: false`), and the setup file
 * runs before each of them.
 */
export function killTrackedChildrenOnExit(): void {
  if (onExit) return;
  onExit = true;
  process.once('exit', () => {
    for (const proc of live) if (running(proc)) proc.kill('SIGKILL');
  });
}
