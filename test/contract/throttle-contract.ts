/**
 * What every implementation of the throttle port must do (issue 31), run against each one: counters in
 * this process, in the shared memory of `serve --workers N`, and in Redis. Time is injected; each test
 * uses names of its own, so implementations sharing a store never see another test's counts.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ThrottlePort } from '../../src/core/coordination/throttle-port.js';

export interface ThrottlePortUnderTest {
  readonly port: ThrottlePort;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const WINDOW = 60_000;

export function throttleContract(name: string, makePort: () => Promise<ThrottlePortUnderTest>): void {
  describe(`throttle port contract: ${name}`, () => {
    let under: ThrottlePortUnderTest;
    let n = '';
    beforeEach(async () => {
      under = await makePort();
      n = randomBytes(4).toString('hex');
    });
    afterEach(async () => {
      await under.close();
    });

    it('admits up to each limit, then refuses taking nothing, with the wait until the oldest unit leaves', async () => {
      const { port } = under;
      const both = [{ name: `a${n}`, limit: 2 }, { name: `b${n}`, limit: 3 }];
      expect(await port.reserve(both, WINDOW, T0)).toEqual({ admitted: true, at: T0 });
      expect(await port.reserve(both, WINDOW, T0 + 1000)).toEqual({ admitted: true, at: T0 + 1000 });
      expect(await port.reserve(both, WINDOW, T0 + 2000)).toEqual({ admitted: false, waitMs: 58_000 });
      // The refusal took nothing from b: it has one unit left.
      expect((await port.reserve([{ name: `b${n}`, limit: 3 }], WINDOW, T0 + 2000)).admitted).toBe(true);
      expect((await port.reserve([{ name: `b${n}`, limit: 3 }], WINDOW, T0 + 2000)).admitted).toBe(false);
      expect((await port.reserve(both, WINDOW, T0 + WINDOW - 1)).admitted).toBe(false);
      // The unit of T0 leaves a window after it, as the refusal said.
      expect(await port.reserve(both, WINDOW, T0 + WINDOW)).toEqual({ admitted: true, at: T0 + WINDOW });
    });

    it('gives a released unit back and forgets a reset counter', async () => {
      const { port } = under;
      const a = [{ name: `a${n}`, limit: 2 }];
      await port.reserve(a, WINDOW, T0);
      const second = await port.reserve(a, WINDOW, T0 + 500);
      expect(second.admitted).toBe(true);
      await port.release(`a${n}`, WINDOW, T0 + 500, T0 + 700);
      expect((await port.reserve(a, WINDOW, T0 + 800)).admitted).toBe(true);
      expect((await port.reserve(a, WINDOW, T0 + 900)).admitted).toBe(false);
      await port.reset(`a${n}`, WINDOW, T0 + 1000);
      expect((await port.reserve(a, WINDOW, T0 + 1000)).admitted).toBe(true);
      // Releasing what was never reserved, or a counter that does not exist, gives nothing away.
      await port.release(`none${n}`, WINDOW, T0, T0 + 1000);
      expect((await port.reserve([{ name: `none${n}`, limit: 1 }], WINDOW, T0 + 1000)).admitted).toBe(true);
    });

    it('admits exactly the limit of many reservations made at once', async () => {
      const { port } = under;
      const verdicts = await Promise.all(Array.from({ length: 50 }, () => port.reserve([{ name: `c${n}`, limit: 7 }, { name: `d${n}`, limit: 40 }], WINDOW, T0)));
      expect(verdicts.filter((v) => v.admitted)).toHaveLength(7);
    });
  });
}
