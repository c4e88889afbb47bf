/**
 * Which server of an endpoint's pool takes the next request: least outstanding requests, weighted. Pure.
 *
 * A server's load is (outstanding + 1) / weight: the requests it would have with this one, per unit of
 * capacity. Weight is a divisor, not a tie-break: a server of weight 2 is given twice the concurrent
 * requests of a server of weight 1 before it looks as busy. Exact ties (equal servers at equal load, the
 * usual case when idle) go to the first at or after `start`, a cursor the pool advances on every pick, so
 * they alternate instead of all landing on the first server.
 */

export interface Choosable {
  readonly outstanding: number;
  readonly weight: number;
  readonly available: boolean;
}

/** The index of the chosen server, or -1 when none is available (`exclude`: an index to skip, or -1). */
export function chooseServer(servers: readonly Choosable[], start: number, exclude: number): number {
  const n = servers.length;
  let best = -1;
  let bestLoad = Number.POSITIVE_INFINITY;
  for (let k = 0; k < n; k += 1) {
    const i = (start + k) % n;
    const s = servers[i] as Choosable;
    if (!s.available || i === exclude) continue;
    const load = (s.outstanding + 1) / s.weight;
    if (load < bestLoad) {
      best = i;
      bestLoad = load;
    }
  }
  return best;
}
