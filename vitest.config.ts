import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Kills what a file's processes left running (a timed-out test never reaches its own stop).
    setupFiles: ['test/helpers/child-cleanup.ts'],
    // API suites spawn real gateway and simulator processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // The two worker processes run file after file: a fresh process per file cost ~0.5 s of CPU each (the
    // unit files ran in 46 s isolated, 25 s not). No test file mocks modules or leaves globals changed
    // behind it; the few that set process.env or fake timers restore them in their own hooks.
    isolate: false,
  },
});
