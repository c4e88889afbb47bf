/**
 * The V8 flags the gateway runs with (src/cli.ts's shebang says why) are given in three places a user
 * starts it from: the `switchboard` command's shebang, `npm start`, and the README's systemd unit. They
 * must not drift apart: a user of one would get another gateway's CPU cost.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
/** node's own flags: the words between `node` and the script. */
const flagsAfterNode = (command: string): string[] => {
  const words = command.trim().split(/\s+/);
  const after = words.slice(words.findIndex((w) => w === 'node' || w.endsWith('/node')) + 1);
  const script = after.findIndex((w) => !w.startsWith('--'));
  return script === -1 ? after : after.slice(0, script);
};

describe('the gateway launch flags', () => {
  const shebang = read('src/cli.ts').split('\n', 1)[0] ?? '';
  const cliFlags = flagsAfterNode(shebang.replace(/^#!/, ''));

  it('the switchboard command gives V8 a 64 MB semi-space', () => {
    expect(shebang.startsWith('#!/usr/bin/env -S node ')).toBe(true);
    expect(cliFlags).toEqual(['--max-semi-space-size=64']);
  });

  it('npm start runs with the same flags', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(flagsAfterNode(pkg.scripts.start ?? '')).toEqual(cliFlags);
  });

  it("the README's systemd unit runs with the same flags", () => {
    const execStart = read('README.md')
      .split('\n')
      .find((line) => line.startsWith('ExecStart='));
    expect(execStart).toBeDefined();
    expect(flagsAfterNode((execStart ?? '').slice('ExecStart='.length))).toEqual(cliFlags);
  });
});
