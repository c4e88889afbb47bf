/**
 * A fetch that client libraries are given in place of the global one (the openai SDK, the AI SDK and
 * LangChain all take a `fetch` option). It counts the HTTP exchanges a library call made, so a test can
 * prove the library did not retry, and keeps the body of every error response exactly as the gateway
 * sent it, so an error the library throws can be compared with what was actually on the wire rather
 * than with a second request whose message may differ (a rate-limit message carries the seconds left).
 */

export interface RecordedExchange {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  /** The response body text, read from a clone only for statuses >= 400 (success bodies may be streams). */
  readonly errorBody: Promise<string> | null;
}

export interface RecordingFetch {
  readonly fetch: typeof globalThis.fetch;
  readonly exchanges: readonly RecordedExchange[];
}

export function recordingFetch(): RecordingFetch {
  const exchanges: RecordedExchange[] = [];
  const record: typeof globalThis.fetch = async (input, init) => {
    // Passed through untouched: wrapping it in a Request would demand `duplex` for streamed bodies.
    const response = await globalThis.fetch(input, init);
    const asRequest = input instanceof Request ? input : null;
    exchanges.push({
      method: init?.method ?? asRequest?.method ?? 'GET',
      url: asRequest?.url ?? String(input),
      status: response.status,
      errorBody: response.status >= 400 ? response.clone().text() : null,
    });
    return response;
  };
  return { fetch: record, exchanges };
}

/** The `error` object of the one error response recorded, failing loudly when there is not exactly one. */
export async function onlyErrorEnvelope(recorded: RecordingFetch): Promise<{ status: number; code: string; message: string }> {
  if (recorded.exchanges.length !== 1) {
    throw new Error(`expected exactly one HTTP exchange, saw ${recorded.exchanges.length}: ${recorded.exchanges.map((e) => e.status).join(', ')}`);
  }
  const [exchange] = recorded.exchanges;
  if (!exchange?.errorBody) throw new Error(`the one exchange was not an error (status ${exchange?.status})`);
  const body = JSON.parse(await exchange.errorBody) as { error?: { code?: unknown; message?: unknown } };
  const { code, message } = body.error ?? {};
  if (typeof code !== 'string' || typeof message !== 'string') throw new Error(`not an error envelope: ${await exchange.errorBody}`);
  return { status: exchange.status, code, message };
}
