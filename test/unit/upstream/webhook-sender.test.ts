import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboundUserAgent } from '../../../src/upstream/user-agent.js';
import { createWebhookSender, type WebhookSender } from '../../../src/upstream/webhook-sender.js';

let server: Server;
let base: string;
let sender: WebhookSender;
const seen: { url: string; headers: Record<string, unknown>; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      if (req.url === '/big') res.end('é'.repeat(40_000));
      else if (req.url === '/redirect') {
        res.writeHead(302, { location: `${base}/ok` });
        res.end();
      } else if (req.url === '/slow') setTimeout(() => res.end('late'), 500);
      else if (req.url === '/error') {
        res.writeHead(503);
        res.end('down for maintenance');
      } else res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sender = createWebhookSender({ policy: { allowPrivate: true, allowHttp: true }, timeoutMs: 200, connectionsPerOrigin: 4, userAgent: UA });
});

afterAll(async () => {
  await sender.close();
  server.closeAllConnections();
  server.close();
});

const UA = outboundUserAgent('1.2.3', { user_agent_link: 'https://example.com/gw', user_agent_contact: 'mailto:ops@example.com' });

const attempt = (path: string) => ({ url: `${base}${path}`, deliveryId: 'del_0123456789abcdef01234567', timestamp: 1_700_000_000, signature: 'sha256=ab', body: '{"id":"evt_1"}' });

describe('createWebhookSender', () => {
  it('POSTs the body with the four delivery headers and reports a 2xx as delivered', async () => {
    const outcome = await sender.send(attempt('/ok?x=1'));
    expect(outcome).toEqual({ ok: true, httpStatus: 200, responseBody: 'ok', errorMessage: null });
    const last = seen.at(-1);
    expect(last).toMatchObject({ url: '/ok?x=1', body: '{"id":"evt_1"}' });
    expect(last?.headers).toMatchObject({
      'content-type': 'application/json',
      'x-webhook-id': 'del_0123456789abcdef01234567',
      'x-webhook-timestamp': '1700000000',
      'x-webhook-signature': 'sha256=ab',
      // SPEC "Message object": third-party requests name the product, its version, a link and a contact.
      'user-agent': UA,
    });
  });

  it('keeps only the first 1 KiB of the response body, cut on a character boundary', async () => {
    const outcome = await sender.send(attempt('/big'));
    expect(outcome.ok).toBe(true);
    expect(Buffer.byteLength(outcome.responseBody ?? '')).toBe(1024);
    expect(outcome.responseBody).toBe('é'.repeat(512));
  });

  it('does not follow redirects: a 302 is a failed attempt', async () => {
    const before = seen.length;
    const outcome = await sender.send(attempt('/redirect'));
    expect(outcome).toMatchObject({ ok: false, httpStatus: 302 });
    expect(seen.length).toBe(before + 1);
  });

  it('reports a non-2xx with its status and body', async () => {
    expect(await sender.send(attempt('/error'))).toEqual({
      ok: false,
      httpStatus: 503,
      responseBody: 'down for maintenance',
      errorMessage: 'the receiver answered HTTP 503',
    });
  });

  it('fails an attempt that outlives the timeout', async () => {
    expect(await sender.send(attempt('/slow'))).toEqual({ ok: false, httpStatus: null, responseBody: null, errorMessage: 'timed out after 200 ms' });
  });

  it('fails a connection that is refused', async () => {
    const outcome = await sender.send({ ...attempt('/'), url: 'http://127.0.0.1:1/' });
    expect(outcome).toMatchObject({ ok: false, httpStatus: null });
    expect(outcome.errorMessage).toMatch(/ECONNREFUSED/);
  });

  it('refuses at connect time a name that resolves to loopback when private targets are not allowed', async () => {
    const strict = createWebhookSender({ policy: { allowPrivate: false, allowHttp: true }, timeoutMs: 1000, connectionsPerOrigin: 1, userAgent: UA });
    const before = seen.length;
    const port = (server.address() as AddressInfo).port;
    const outcome = await strict.send({ ...attempt('/'), url: `http://localhost:${port}/ok` });
    await strict.close();
    expect(outcome).toMatchObject({ ok: false, httpStatus: null });
    expect(outcome.errorMessage).toMatch(/^refused at connect: localhost resolves to/);
    expect(seen.length).toBe(before);
  });

  it('refuses an address literal the policy forbids without connecting', async () => {
    const strict = createWebhookSender({ policy: { allowPrivate: false, allowHttp: true }, timeoutMs: 1000, connectionsPerOrigin: 1, userAgent: UA });
    const outcome = await strict.send(attempt('/ok'));
    await strict.close();
    expect(outcome).toEqual({ ok: false, httpStatus: null, responseBody: null, errorMessage: 'refused: 127.0.0.1 is a loopback address' });
  });
});
