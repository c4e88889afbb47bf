/**
 * Latency objectives in the routing decision (issue 14) and the measurements they are judged on: endpoints
 * meeting the turn's objective rank ahead of those missing it, similarity ordering each group; no data
 * meets; the floor still applies; a conversation leaves an endpoint that misses for one that meets.
 */
import { describe, expect, it } from 'vitest';
import { decideRoute } from '../../../../src/core/routing/decide.js';
import { attainment, LatencyWindows, requestedSlo, sloHeader } from '../../../../src/core/routing/latency-window.js';
import { A, B, C, input, scores } from './fixtures.js';

describe('SLO-aware ranking', () => {
  const SIM = scores({ [A]: 0.8, [B]: 0.6, [C]: 0.2 });

  it('ranks an endpoint meeting the objective ahead of a more similar one missing it', () => {
    const d = decideRoute(input({ sloMisses: new Set([A]) }), SIM);
    expect(d).toMatchObject({ endpointId: B, reason: 'matched' });
    // Candidates follow the ranking: the group meeting the objective, then the one missing it.
    expect(d.candidates.map((c) => [c.endpoint_id, c.dropped_by])).toEqual([
      [B, null],
      [C, 'below_floor'],
      [A, 'outranked'],
    ]);
  });

  it('keeps similarity order when every endpoint misses, and when none does', () => {
    expect(decideRoute(input({ sloMisses: new Set([A, B, C]) }), SIM).endpointId).toBe(A);
    expect(decideRoute(input({ sloMisses: new Set() }), SIM).endpointId).toBe(A);
  });

  it('never serves an endpoint below the similarity floor for meeting the objective', () => {
    expect(decideRoute(input({ sloMisses: new Set([A, B]) }), SIM).endpointId).toBe(A);
  });

  it('moves a conversation off an endpoint that misses to one that meets, margin or not', () => {
    const close = scores({ [A]: 0.6, [B]: 0.62, [C]: 0.1 });
    expect(decideRoute(input({ incumbentId: A }), close)).toMatchObject({ endpointId: A, reason: 'sticky' });
    expect(decideRoute(input({ incumbentId: A, sloMisses: new Set([A]) }), close)).toMatchObject({ endpointId: B, reason: 'matched', evictedIncumbentId: A });
  });

  it('keeps a conversation on an endpoint that meets rather than a more similar one that misses', () => {
    const far = scores({ [A]: 0.4, [B]: 0.9, [C]: 0.1 });
    expect(decideRoute(input({ incumbentId: A }), far).endpointId).toBe(B);
    expect(decideRoute(input({ incumbentId: A, sloMisses: new Set([B]) }), far)).toMatchObject({ endpointId: A, reason: 'sticky' });
  });
});

describe('latency windows and attainment', () => {
  it('judges the median of the last turns, so one slow turn does not flip an endpoint', () => {
    const w = new LatencyWindows(5);
    for (const ms of [100, 100, 900]) w.record('e', ms, 10);
    expect(w.measured('e')).toEqual({ ttftMs: 100, tpotMs: 10, samples: 3 });
    for (const ms of [900, 900, 900]) w.record('e', ms, null);
    expect(w.measured('e')).toMatchObject({ ttftMs: 900, samples: 5 });
  });

  it('meets with no data, misses when any measured objective is exceeded', () => {
    const none = { ttftMs: null, tpotMs: null, samples: 0 };
    expect(attainment(none, { ttftMs: 100, tpotMs: null })).toBe('no_data');
    expect(attainment({ ttftMs: 50, tpotMs: 30, samples: 2 }, { ttftMs: null, tpotMs: null })).toBe('no_objective');
    expect(attainment({ ttftMs: 50, tpotMs: 30, samples: 2 }, { ttftMs: 100, tpotMs: 20 })).toBe('misses');
    expect(attainment({ ttftMs: 50, tpotMs: null, samples: 2 }, { ttftMs: 100, tpotMs: 20 })).toBe('meets');
  });

  it('reads the SLO headers as positive numbers and ignores anything else', () => {
    expect(sloHeader(' 250 ')).toBe(250);
    expect(sloHeader('12.5')).toBe(12.5);
    for (const bad of ['0', '-3', 'soon', '', '1e3', 'Infinity', undefined]) expect(sloHeader(bad)).toBeNull();
    expect(requestedSlo('x', undefined)).toBeNull();
    expect(requestedSlo(undefined, '20')).toEqual({ ttftMs: null, tpotMs: 20 });
  });
});
