/**
 * Request bodies a client may send to hurt the server: chunked and oversized uploads, answered early or
 * refused. Regressions: one unauthenticated chunked POST past 256 KiB to a 16 KiB route ended the process
 * (the body reader closed a response uWS had already finished), and the 413 for an announced 64 MiB body
 * was lost to a connection reset in about 2 of 5 tries.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { chunk, openRaw, readResponse, requestHead, type RawExchange } from '../helpers/raw-http.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite();
const MiB = 1024 * 1024;

async function healthy(): Promise<void> {
  const res = await fetch(`${suite.gw.url}/healthz`);
  expect(res.status).toBe(200);
}

/** Writes `total` bytes of chunked body in `size` pieces, stopping early if the server hangs up. */
async function sendChunked(raw: RawExchange, total: number, size: number): Promise<number> {
  const piece = chunk(Buffer.alloc(size, 0x61));
  let sent = 0;
  while (sent < total) {
    if (!(await raw.write(piece))) break;
    sent += size;
  }
  return sent;
}

function unexpectedErrors(): string {
  return suite.gw.stdout.join('').split('\n').filter((l) => l.includes('"unexpected error"') || l.includes('must not be accessed')).join('\n') + suite.gw.stderr.join('');
}

describe('oversized and early-answered bodies', () => {
  it('answers an unauthenticated chunked upload of 300 KiB to a 16 KiB route with 401, and the connection stays usable', async () => {
    const raw = await openRaw(suite.gw.url);
    await raw.write(requestHead('POST', `/${PROJECT}/v1/webhooks`, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
    await sendChunked(raw, 300 * 1024, 16 * 1024);
    await raw.write('0\r\n\r\n');
    const res = await readResponse(raw);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: expect.any(String) } });
    // The same connection serves the next request: the body was read to its end and dropped.
    await raw.write(requestHead('GET', '/healthz', {}));
    await new Promise((r) => setTimeout(r, 50));
    expect(raw.received().toString('latin1')).toMatch(/HTTP\/1\.1 200 OK[\s\S]*$/);
    raw.socket.destroy();
    await healthy();
  });

  it('survives an unauthenticated chunked upload that never ends (4 MiB and counting) to a 16 KiB route', async () => {
    const raw = await openRaw(suite.gw.url);
    await raw.write(requestHead('POST', `/${PROJECT}/v1/webhooks`, { 'transfer-encoding': 'chunked' }));
    await sendChunked(raw, 4 * MiB, 64 * 1024);
    raw.socket.destroy();
    await healthy();
    expect(unexpectedErrors()).toBe('');
  });

  it('survives a chunked chat upload past 128 MiB (16x the inference cap)', async () => {
    const raw = await openRaw(suite.gw.url);
    await raw.write(requestHead('POST', `/${PROJECT}/chat/v1/chat/completions`, { authorization: `Bearer ${suite.keys.full}`, 'transfer-encoding': 'chunked' }));
    const sent = await sendChunked(raw, 140 * MiB, MiB);
    raw.socket.destroy();
    // The gateway gave up on the connection once the discard bound was passed.
    expect(sent).toBeLessThan(140 * MiB);
    await healthy();
    expect(unexpectedErrors()).toBe('');
  });

  it('returns the 413 for an announced 64 MiB body every time, to a client that keeps sending (10 tries)', async () => {
    for (let i = 0; i < 10; i++) {
      const raw = await openRaw(suite.gw.url);
      await raw.write(requestHead('POST', `/${PROJECT}/chat/v1/chat/completions`, { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'content-length': String(64 * MiB) }));
      const piece = Buffer.alloc(MiB, 0x20);
      for (let sent = 0; sent < 64 * MiB; sent += MiB) if (!(await raw.write(piece))) break;
      const res = await readResponse(raw);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'payload_too_large', param: null } });
      raw.socket.destroy();
    }
    await healthy();
  });

  it('drops the body of a request refused before its route runs (404) and keeps the connection', async () => {
    const raw = await openRaw(suite.gw.url);
    const body = 'x'.repeat(100_000);
    await raw.write(requestHead('POST', '/nowhere', { 'content-length': String(body.length) }) + body);
    const res = await readResponse(raw);
    expect(res.status).toBe(404);
    await raw.write(requestHead('GET', '/healthz', {}));
    await new Promise((r) => setTimeout(r, 50));
    expect(raw.received().toString('latin1').match(/HTTP\/1\.1 /g)).toHaveLength(2);
    raw.socket.destroy();
  });
});
