/**
 * API suites spawn the compiled CLI (dist/), so build once before any suite runs: a test never runs
 * against stale JavaScript.
 */
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  // For iterating on tests against a dist/ you just built yourself; CI never sets it.
  if (process.env.SWITCHBOARD_SKIP_BUILD === '1') return;
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
}
