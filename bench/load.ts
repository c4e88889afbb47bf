/**
 * One autocannon run, in-process. autocannon's own latency histogram has 1 ms resolution (integers),
 * useless at sub-millisecond latencies, so percentiles come from its per-response `responseTime`
 * (float ms, process.hrtime), over every response, non-2xx included (the non-2xx count says how many).
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Requests a second over all connections (autocannon's overallRate); unset: as fast as answered. */
  readonly rate?: number;
}

export interface LoadResult {
  readonly completed: number;
  readonly reqPerSec: number;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly statusCodes: Record<string, number>;
}

export function percentile(sorted: Float64Array | number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? null;
}

class Samples {
  private buf = new Float64Array(1 << 16);
  private n = 0;
  add(v: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = v;
  }
  sorted(): Float64Array {
    return this.buf.slice(0, this.n).sort();
  }
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const samples = new Samples();
  const statusCodes: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: 'POST',
        connections: spec.connections,
        duration: spec.seconds,
        ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
        pipelining: 1,
        timeout: 10,
        headers: { 'content-type': 'application/json', ...spec.headers },
        body: spec.body,
      },
      (err: unknown, result: autocannon.Result) => {
        if (err) return reject(err instanceof Error ? err : new Error(String(err)));
        const sorted = samples.sorted();
        resolve({
          completed: result.requests.total,
          reqPerSec: result.requests.total / (result.duration || spec.seconds),
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          statusCodes,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      samples.add(responseTime);
      const k = String(statusCode);
      statusCodes[k] = (statusCodes[k] ?? 0) + 1;
    });
  });
}
