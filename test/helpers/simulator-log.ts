/** Reads what the simulator received (its /__sim/requests log): the proof of what reached the upstream. */

export interface SimRequest {
  readonly seq: number;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly aborted: boolean;
  readonly aborted_at_ms: number | null;
  readonly completed: boolean;
}

function simOrigin(simUrl: string): string {
  return simUrl.replace(/\/v1\/?$/, '');
}

export async function simRequests(simUrl: string, limit = 20): Promise<SimRequest[]> {
  const res = await fetch(`${simOrigin(simUrl)}/__sim/requests?limit=${limit}`);
  return ((await res.json()) as { data: SimRequest[] }).data;
}

export async function lastSimRequest(simUrl: string): Promise<SimRequest> {
  const [last] = await simRequests(simUrl, 1);
  if (!last) throw new Error('the simulator received no request');
  return last;
}

/** The sequence number of the newest request (0 when none): compare before and after a call. */
export async function simSeq(simUrl: string): Promise<number> {
  return (await simRequests(simUrl, 1))[0]?.seq ?? 0;
}

export async function waitForSim(simUrl: string, predicate: (r: SimRequest) => boolean, timeoutMs = 5000): Promise<SimRequest> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const found = (await simRequests(simUrl, 50)).find(predicate);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the simulator never saw the expected request');
}

export interface EchoWatch {
  /** Stops reading the log (after one last read); idempotent. */
  stop(): Promise<void>;
  /** How many times each `<marker>-<n>` id reached the simulator so far. */
  counts(): Map<string, number>;
}

/**
 * Follows the simulator's log while a run sends many `echo: <marker>-<n>` turns: the log keeps its last
 * 200 requests, so it is read as it fills, deduplicated by sequence number. The proof that no line
 * reached the model twice.
 */
export function watchEchoes(simUrl: string, marker: string): EchoWatch {
  const seen = new Map<number, string>();
  const pattern = new RegExp(`echo: (${marker}-\\d+)`);
  let polling = true;
  const read = async (): Promise<void> => {
    for (const r of await simRequests(simUrl, 200)) {
      const m = pattern.exec(r.body);
      if (m?.[1]) seen.set(r.seq, m[1]);
    }
  };
  const poller = (async () => {
    while (polling) {
      await read();
      await new Promise((res) => setTimeout(res, 20));
    }
    await read();
  })();
  return {
    async stop() {
      polling = false;
      await poller;
    },
    counts() {
      const upstream = new Map<string, number>();
      for (const id of seen.values()) upstream.set(id, (upstream.get(id) ?? 0) + 1);
      return upstream;
    },
  };
}
