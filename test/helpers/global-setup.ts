/**
 * API suites spawn the compiled CLI (dist/), so build once before any suite runs: a test never runs
 * against stale JavaScript. The tests themselves are type-checked too, with the project's strict
 * settings (tsconfig.test.json): vitest only strips types, so a test could otherwise call a function
 * with arguments it no longer takes and still pass.
 */
import { execFileSync } from 'node:child_process';

const tsc = (project: string): void => {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
};

export default function setup(): void {
  // For iterating on tests against a dist/ you just built yourself; CI never sets it.
  if (process.env.SWITCHBOARD_SKIP_BUILD === '1') return;
  tsc('tsconfig.json');
  tsc('tsconfig.test.json');
}
