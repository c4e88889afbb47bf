/**
 * A graceful stop (SIGTERM) with streams in flight. Regressions from trying to break the running gateway:
 * every stream in flight ended in a chunked-framing error (`Connection: close` written inside the body),
 * and streams still open at the drain deadline were cut after an ordinary chunk, billed as aborted; an
 * upload still arriving at the stop left its temp file behind (issue 31).
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { PROJECT, testConfig } from '../helpers/configs.js';
import { startGatewayProcess } from '../helpers/processes.js';
import { openRaw, readResponse, requestHead } from '../helpers/raw-http.js';
import { simSeq, waitForSim } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import { useSimulator } from '../helpers/suite.js';
import { openUsageDb } from '../helpers/usage-db.js';

const suite = useSimulator();

const CHAT_PATH = `/${PROJECT}/chat/v1/chat/completions`;

function streamBody(tokens: number, delayMs: number, tag: string): string {
  return JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: tag }], sim: { tokens, delay_ms: delayMs } });
}

/** Starts a raw streamed request and resolves once the simulator is serving it. */
async function startStream(gatewayUrl: string, key: string, tokens: number, delayMs: number) {
  const tag = `stream-${Math.random().toString(16).slice(2)}`;
  const before = await simSeq(suite.sim.url);
  const raw = await openRaw(gatewayUrl);
  const body = streamBody(tokens, delayMs, tag);
  await raw.write(requestHead('POST', CHAT_PATH, { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }) + body);
  await waitForSim(suite.sim.url, (r) => r.seq > before && r.body.includes(tag));
  return raw;
}

describe('SIGTERM with a stream in flight', () => {
  it('lets the stream finish with valid chunked framing: [DONE], then the terminating chunk, nothing inside the body', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys));
    const raw = await startStream(gw.url, suite.keys.full, 8, 50);
    const exited = gw.stop('SIGTERM');
    const res = await readResponse(raw);
    expect(res.status).toBe(200);
    expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(res.body).not.toContain('Connection');
    const frames = parseSse(res.body);
    expect(frames.filter((f) => f.data !== '[DONE]').every((f) => !('error' in (JSON.parse(f.data) as object)))).toBe(true);
    raw.socket.destroy();
    expect(await exited).toBe(0);
  });

  it('lets the official SDK read a stream in flight to its end without a framing error', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys));
    const client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/chat/v1`, apiKey: suite.keys.full, maxRetries: 0 });
    const before = await simSeq(suite.sim.url);
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'sdk-drain' }], ...({ sim: { tokens: 8, delay_ms: 50 } } as object) });
    await waitForSim(suite.sim.url, (r) => r.seq > before && r.body.includes('sdk-drain'));
    const exited = gw.stop('SIGTERM');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(await exited).toBe(0);
  });

  it('ends a stream still open at the drain deadline with a service_draining error frame and [DONE], billed as drained for what was delivered', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys, { server: { drain_timeout_ms: 500 } }));
    // 100 tokens at 50 ms: about 5 s, far past the 500 ms deadline.
    const raw = await startStream(gw.url, suite.keys.full, 100, 50);
    const exited = gw.stop('SIGTERM');
    const res = await readResponse(raw);
    expect(res.status).toBe(200);
    const frames = parseSse(res.body);
    const last = frames.at(-1);
    const error = frames.at(-2);
    expect(last?.data).toBe('[DONE]');
    const envelope = JSON.parse(error?.data ?? '{}') as { error?: { code?: string; type?: string; message?: string; param?: unknown } };
    expect(envelope.error?.code).toBe('service_draining');
    expect(Object.keys(envelope.error ?? {}).sort()).toEqual(['code', 'message', 'param', 'type']);
    const delivered = frames.slice(0, -2).filter((f) => (JSON.parse(f.data) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content).length;
    expect(delivered).toBeGreaterThan(0);
    expect(await exited).toBe(0);

    const ledger = openUsageDb(gw.dbPath);
    try {
      const [row] = ledger.recent(1);
      expect(row?.status).toBe('drained');
      expect(row?.completion_tokens).toBeGreaterThan(0);
      expect(row?.completion_tokens).toBeLessThan(100);
    } finally {
      ledger.close();
    }
  });
});

describe('SIGTERM with a buffered turn waiting on its model', () => {
  it('answers it 503 service_draining at the drain deadline (retryable), billed as drained, not an empty reply', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys, { server: { drain_timeout_ms: 500 } }));
    const tag = `buffered-${Math.random().toString(16).slice(2)}`;
    const before = await simSeq(suite.sim.url);
    const raw = await openRaw(gw.url);
    // 100 tokens at 50 ms before the answer: about 5 s, far past the 500 ms deadline.
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: tag }], sim: { tokens: 100, delay_ms: 50 } });
    await raw.write(requestHead('POST', CHAT_PATH, { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }) + body);
    await waitForSim(suite.sim.url, (r) => r.seq > before && r.body.includes(tag));
    const exited = gw.stop('SIGTERM');
    const res = await readResponse(raw);
    expect(res.status).toBe(503);
    expect(res.headers['x-should-retry']).toBe('true');
    expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe('service_draining');
    expect(await exited).toBe(0);

    const ledger = openUsageDb(gw.dbPath);
    try {
      expect(ledger.recent(1)[0]?.status).toBe('drained');
    } finally {
      ledger.close();
    }
  });
});

describe('during a graceful stop', () => {
  it('keeps listening while work is in flight: /readyz answers 503 draining, /healthz 200, a new chat request 503 service_draining', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys));
    const raw = await startStream(gw.url, suite.keys.full, 20, 50);
    const exited = gw.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'draining' });
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    const refused = await fetch(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'late' }] }) });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('service_draining');
    const res = await readResponse(raw);
    expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await exited).toBe(0);
  });
});

describe('SIGTERM with an upload arriving', () => {
  it('removes the temp file of an upload still arriving at the drain deadline', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys, { server: { drain_timeout_ms: 200 } }));
    const tmpDir = join(dirname(gw.dbPath), 'files', 'tmp');
    const boundary = 'stop-boundary';
    const raw = await openRaw(gw.url);
    await raw.write(
      requestHead('POST', `/${PROJECT}/v1/files`, { authorization: `Bearer ${suite.keys.full}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(64 * 1024 * 1024) }) +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`,
    );
    await raw.write(Buffer.alloc(1024 * 1024, 0x61));
    for (const until = Date.now() + 10_000; readdirSync(tmpDir).length === 0; ) {
      if (Date.now() > until) throw new Error('the upload never reached its temp file');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await gw.stop('SIGTERM')).toBe(0);
    expect(readdirSync(tmpDir)).toEqual([]);
    raw.socket.destroy();
  });
});
