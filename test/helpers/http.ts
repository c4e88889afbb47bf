/** Small fetch wrappers for API tests: every error body is checked against the SPEC envelope. */
import { expect } from 'vitest';

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

export async function call(
  url: string,
  init: { method?: string; key?: string; headers?: Record<string, string>; body?: string | object } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  let body: string | undefined;
  if (typeof init.body === 'string') body = init.body;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (metrics text): keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Asserts status and the exact envelope `{error: {message, type, code, param}}`. */
export function expectError(res: JsonResponse, status: number, code: string, param: string | null = null): void {
  expect({ status: res.status, code: errorOf(res).code, param: errorOf(res).param }).toEqual({ status, code, param });
  const error = errorOf(res);
  expect(typeof error.message).toBe('string');
  expect((error.message as string).length).toBeGreaterThan(0);
  expect(typeof error.type).toBe('string');
  expect(Object.keys(res.body as object)).toEqual(['error']);
  expect(res.headers.get('x-request-id')).toMatch(/^(req_|chatcmpl-)[0-9a-f]{24}$/);
}

export function errorOf(res: JsonResponse): Record<string, unknown> {
  const body = res.body as { error?: Record<string, unknown> };
  if (!body || typeof body !== 'object' || !body.error) throw new Error(`not an error envelope (${res.status}): ${JSON.stringify(res.body)}`);
  return body.error;
}

/** Moves a test gateway's clock forward (its config has testing.controllable_clock: true); `freeze` stops it (true) or lets it run (false). */
export async function advanceClock(gatewayUrl: string, ms: number, freeze?: boolean): Promise<number> {
  const res = await call(`${gatewayUrl}/__test/clock`, { body: freeze === undefined ? { advance_ms: ms } : { advance_ms: ms, freeze } });
  if (res.status !== 200) throw new Error(`cannot advance the clock: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { now: number }).now;
}
