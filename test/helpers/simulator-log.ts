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
