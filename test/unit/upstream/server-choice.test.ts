import { describe, expect, it } from 'vitest';
import { chooseServer, type Choosable } from '../../../src/upstream/server-choice.js';

const s = (outstanding: number, weight = 1, available = true): Choosable => ({ outstanding, weight, available });

describe('chooseServer', () => {
  it('picks the server with the fewest outstanding requests', () => {
    expect(chooseServer([s(3), s(1), s(2)], 0, -1)).toBe(1);
  });

  it('divides outstanding requests by weight: a weight-2 server takes twice the concurrent load', () => {
    // (4+1)/2 = 2.5 beats (2+1)/1 = 3: the heavier server is still less busy per unit of capacity.
    expect(chooseServer([s(2, 1), s(4, 2)], 0, -1)).toBe(1);
    // (5+1)/2 = 3 ties (2+1)/1 = 3: the tie goes to the cursor's side.
    expect(chooseServer([s(2, 1), s(5, 2)], 0, -1)).toBe(0);
    expect(chooseServer([s(2, 1), s(5, 2)], 1, -1)).toBe(1);
  });

  it('sends an idle pool to the heavier server first', () => {
    expect(chooseServer([s(0, 1), s(0, 3)], 0, -1)).toBe(1);
  });

  it('breaks exact ties from the cursor, so equal idle servers alternate', () => {
    const pool = [s(0), s(0), s(0)];
    expect([0, 1, 2, 3].map((start) => chooseServer(pool, start % 3, -1))).toEqual([0, 1, 2, 0]);
  });

  it('skips servers that are out and the excluded one', () => {
    expect(chooseServer([s(0, 1, false), s(5), s(9)], 0, -1)).toBe(1);
    expect(chooseServer([s(0, 1, false), s(5), s(9)], 0, 1)).toBe(2);
  });

  it('returns -1 when no server is available', () => {
    expect(chooseServer([s(0, 1, false), s(0)], 0, 1)).toBe(-1);
    expect(chooseServer([], 0, -1)).toBe(-1);
  });
});
