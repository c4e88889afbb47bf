/**
 * The drain deadline's watch list (http/drain-state.ts): a linked list since issue 35 round 8, so the
 * order of joining and leaving is where it can go wrong: every handler still watching runs once at the
 * deadline, whichever of the first, middle or last left before, and leaving twice changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { DrainState } from '../../../src/http/drain-state.js';

function watched(drain: DrainState, names: readonly string[], ran: string[]): Map<string, () => void> {
  return new Map(names.map((name) => [name, drain.onDeadline(() => ran.push(name))]));
}

describe('DrainState deadline watches', () => {
  it('runs every handler still watching once, and none that left', () => {
    for (const leaving of [['a'], ['c'], ['e'], ['b', 'd'], ['a', 'e'], ['a', 'b', 'c', 'd', 'e']]) {
      const drain = new DrainState();
      const ran: string[] = [];
      const leave = watched(drain, ['a', 'b', 'c', 'd', 'e'], ran);
      for (const name of leaving) leave.get(name)?.();
      drain.deadline();
      expect(ran.sort()).toEqual(['a', 'b', 'c', 'd', 'e'].filter((n) => !leaving.includes(n)));
    }
  });

  it('leaving twice, or after the deadline, removes nothing else', () => {
    const drain = new DrainState();
    const ran: string[] = [];
    const leave = watched(drain, ['a', 'b', 'c'], ran);
    leave.get('b')?.();
    leave.get('b')?.();
    drain.deadline();
    leave.get('a')?.();
    expect(ran.sort()).toEqual(['a', 'c']);
  });

  it('a deadline runs a handler once; a watch that joins after it waits for the next one', () => {
    const drain = new DrainState();
    const ran: string[] = [];
    watched(drain, ['a'], ran);
    drain.deadline();
    drain.deadline();
    expect(ran).toEqual(['a']);
    const late = watched(drain, ['b', 'c'], ran);
    late.get('c')?.();
    drain.deadline();
    expect(ran).toEqual(['a', 'b']);
  });

  it('a handler that joins another watch while the deadline runs is not lost', () => {
    const drain = new DrainState();
    const ran: string[] = [];
    drain.onDeadline(() => {
      ran.push('first');
      drain.onDeadline(() => ran.push('joined during'));
    });
    drain.deadline();
    expect(ran).toEqual(['first']);
    drain.deadline();
    expect(ran).toEqual(['first', 'joined during']);
  });
});
