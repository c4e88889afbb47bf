/**
 * SPEC Limits' 10 test deliveries per webhook per hour, held by a deployment of several gateways (worker
 * threads of `serve --workers N`, or replicas): one webhook, then 15 concurrent `POST .../test` spread over
 * connections to different gateways, each answer with the `X-Service-Worker-ID` of the gateway that gave it.
 * Each connection is an undici Client of its own: one socket, so it stays on the gateway that accepted it.
 */
import { Client } from 'undici';
import { expect } from 'vitest';
import { PROJECT } from './configs.js';
import { expectError, type JsonResponse } from './http.js';

/** One request on `client`'s connection, as helpers/http.ts `call` answers it (so expectError applies). */
export async function callOn(client: Client, path: string, key: string, method: 'GET' | 'POST', body?: object): Promise<JsonResponse> {
  const res = await client.request({
    path,
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.statusCode, headers, body: parsed };
}

/** A webhook of PROJECT pointing at `receiverUrl`, created through `client`; its id. */
export async function createWebhook(client: Client, key: string, receiverUrl: string): Promise<string> {
  const created = await callOn(client, `/${PROJECT}/v1/webhooks`, key, 'POST', { url: receiverUrl, events: ['exec.completed'] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return (created.body as { id: string }).id;
}

/**
 * 15 test deliveries of `webhookId` at once, the i-th on connection i mod n. Resolves with each answer and
 * the gateway (X-Service-Worker-ID) that gave it.
 */
export async function testBurst(clients: readonly Client[], key: string, webhookId: string, count = 15): Promise<{ res: JsonResponse; worker: string }[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await callOn(clients[i % clients.length] as Client, `/${PROJECT}/v1/webhooks/${webhookId}/test`, key, 'POST');
      return { res, worker: res.headers.get('x-service-worker-id') ?? '' };
    }),
  );
}

/** Exactly 10 of the burst's answers sent the test; the other 5 are SPEC's 429, Retry-After and retry_after agreeing. */
export function expectTenSent(answers: readonly { res: JsonResponse }[]): void {
  const sent = answers.filter((a) => a.res.status === 200);
  const refused = answers.filter((a) => a.res.status !== 200);
  expect(sent.length).toBe(10);
  for (const { res } of sent) expect(res.body).toMatchObject({ success: true, http_status: 200 });
  expect(refused.length).toBe(5);
  for (const { res } of refused) {
    expectError(res, 429, 'webhook_test_limit_exceeded');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3000);
    expect((res.body as { error: { retry_after: number } }).error.retry_after).toBe(retryAfter);
  }
}
