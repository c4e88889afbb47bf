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
  },
});
