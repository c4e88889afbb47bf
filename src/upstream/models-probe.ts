/**
 * GET {base_url}/models on one upstream server: the health probe that brings a server back from its
 * cooldown (upstream-pool.ts) and the check `switchboard config check` runs on every server. A cheap route
 * every OpenAI-compatible server has, and one that tries the server's key without spending a model turn.
 */
import type { Dispatcher } from 'undici';

export interface ProbeTarget {
  readonly origin: string;
  readonly prefix: string;
  readonly apiKey: string | null;
}

export type ProbeResult =
  | { readonly ok: true; readonly status: number; readonly ms: number }
  | { readonly ok: false; readonly status: number | null; readonly error: unknown; readonly ms: number };

/** Never rejects: a transport error comes back as `{ok: false, status: null, error}`. */
export async function probeModels(dispatcher: Dispatcher, server: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now();
  const ms = (): number => Math.round(performance.now() - started);
  try {
    const res = await dispatcher.request({
      origin: server.origin,
      path: `${server.prefix}/models`,
      method: 'GET',
      headers: server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {},
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body.dump();
    return res.statusCode < 400 ? { ok: true, status: res.statusCode, ms: ms() } : { ok: false, status: res.statusCode, error: null, ms: ms() };
  } catch (error) {
    return { ok: false, status: null, error, ms: ms() };
  }
}
