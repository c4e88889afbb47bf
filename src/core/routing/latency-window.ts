/**
 * Measured latency per endpoint (issue 14, docs/decisions.md "Rerank, SLOs and model aliases"): a small
 * rolling window of time to first token and time per output token, fed by streamed turns. The judgement
 * of an objective uses the window's median, so one slow turn does not flip an endpoint and a handful of
 * recent ones do. Pure and in memory: each gateway process measures what it served.
 */

/** Turns kept per endpoint and measure. */
export const LATENCY_WINDOW = 20;

export interface LatencyObjective {
  readonly ttftMs: number | null;
  readonly tpotMs: number | null;
}

export interface MeasuredLatency {
  /** Median of the window, null with no sample. */
  readonly ttftMs: number | null;
  readonly tpotMs: number | null;
  readonly samples: number;
}

export type Attainment = 'meets' | 'misses' | 'no_data' | 'no_objective';

class Ring {
  readonly #values: number[] = [];
  #next = 0;
  constructor(readonly size: number) {}

  push(v: number): void {
    if (this.#values.length < this.size) this.#values.push(v);
    else this.#values[this.#next] = v;
    this.#next = (this.#next + 1) % this.size;
  }

  get length(): number {
    return this.#values.length;
  }

  median(): number | null {
    if (this.#values.length === 0) return null;
    const sorted = [...this.#values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  }
}

export class LatencyWindows {
  readonly #ttft = new Map<string, Ring>();
  readonly #tpot = new Map<string, Ring>();
  constructor(readonly size = LATENCY_WINDOW) {}

  /** One streamed turn; tpotMs is null when the turn had fewer than two output tokens. */
  record(endpointId: string, ttftMs: number, tpotMs: number | null): void {
    this.#ring(this.#ttft, endpointId).push(ttftMs);
    if (tpotMs !== null) this.#ring(this.#tpot, endpointId).push(tpotMs);
  }

  measured(endpointId: string): MeasuredLatency {
    const ttft = this.#ttft.get(endpointId);
    return { ttftMs: ttft?.median() ?? null, tpotMs: this.#tpot.get(endpointId)?.median() ?? null, samples: ttft?.length ?? 0 };
  }

  #ring(map: Map<string, Ring>, id: string): Ring {
    let ring = map.get(id);
    if (!ring) map.set(id, (ring = new Ring(this.size)));
    return ring;
  }
}

/**
 * Whether measured latency meets an objective: every objective set and measured must hold. A measure with
 * no sample meets it (a new or idle endpoint is given the benefit of the doubt, so it gets traffic and
 * thereby measurements).
 */
export function attainment(measured: MeasuredLatency, objective: LatencyObjective): Attainment {
  if (objective.ttftMs === null && objective.tpotMs === null) return 'no_objective';
  const checks: boolean[] = [];
  if (objective.ttftMs !== null && measured.ttftMs !== null) checks.push(measured.ttftMs <= objective.ttftMs);
  if (objective.tpotMs !== null && measured.tpotMs !== null) checks.push(measured.tpotMs <= objective.tpotMs);
  if (checks.length === 0) return 'no_data';
  return checks.every(Boolean) ? 'meets' : 'misses';
}

/** SPEC request headers X-SLO-TTFT-Ms / X-SLO-TPOT-Ms: a positive finite number, anything else ignored. */
export function sloHeader(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const text = raw.trim();
  if (!/^\d+(\.\d+)?$|^\.\d+$/.test(text)) return null;
  const n = Number(text);
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** The turn's objective from the two headers; null when neither holds a valid value. */
export function requestedSlo(ttft: string | undefined, tpot: string | undefined): LatencyObjective | null {
  const ttftMs = sloHeader(ttft);
  const tpotMs = sloHeader(tpot);
  return ttftMs === null && tpotMs === null ? null : { ttftMs, tpotMs };
}
