/**
 * Bodies an attacker-style probe sent (issue 31, item 10), each a regression: a batch whose input has one
 * line nested 100,000 deep stayed `validating` forever (a stack overflow at every sweep); a multipart file
 * named `résumé.jsonl` was stored as `rÃ©sumÃ©.jsonl`; a request followed by a half-close (FIN) was run,
 * billed and stored though its answer could never arrive.
 */
import OpenAI, { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { waitForLog } from '../helpers/gateway-log.js';
import { openRaw, requestHead } from '../helpers/raw-http.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite({ limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 } });
const client = (): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${PROJECT}/v1`, apiKey: suite.keys.full, maxRetries: 0 });

describe('hostile bodies', () => {
  it('keeps a multipart file name in UTF-8: résumé.jsonl stays résumé.jsonl', async () => {
    const boundary = 'utf8-boundary';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n--${boundary}\r\n`),
      // Raw UTF-8 in the parameter, as browsers and the SDKs send it.
      Buffer.from('Content-Disposition: form-data; name="file"; filename="résumé.jsonl"\r\n\r\n{}\r\n', 'utf8'),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const res = await fetch(`${suite.gw.url}/${PROJECT}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { filename: string }).filename).toBe('résumé.jsonl');
  });

  it('fails a batch line nested 100,000 deep on its own, and runs the batch', async () => {
    const c = client();
    const line = (id: string, content: unknown) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'model-chat', messages: [{ role: 'user', content }] } });
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const text = [line('fine', 'echo: ok'), line('deep', 'x').replace('"x"', deep)].join('\n');
    const file = await c.files.create({ file: await toFile(Buffer.from(text), 'batch.jsonl'), purpose: 'batch' });
    const created = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    let batch = created;
    for (const until = Date.now() + 20_000; !['completed', 'failed', 'expired', 'cancelled'].includes(batch.status); ) {
      if (Date.now() > until) throw new Error(`batch still ${batch.status}`);
      await new Promise((r) => setTimeout(r, 50));
      batch = await c.batches.retrieve(created.id);
    }
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 1, failed: 1 } });
    const errors = (await (await c.files.content(batch.error_file_id ?? '')).text()).trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string | null; error: { code: string } | null });
    expect(errors).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'invalid_json' }) })]);
  });

  it('stores nothing for an upload followed by a half-close (FIN), whose answer could never arrive', async () => {
    const boundary = 'fin-boundary';
    const name = `fin-${Math.random().toString(16).slice(2)}.jsonl`;
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\n{}\r\n--${boundary}--\r\n`;
    const raw = await openRaw(suite.gw.url);
    raw.socket.write(
      requestHead('POST', `/${PROJECT}/v1/files`, { authorization: `Bearer ${suite.keys.full}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(Buffer.byteLength(body)) }) + body,
    );
    raw.socket.end();
    expect((await raw.closed).bytes.length).toBe(0);
    // The request is over (its access line is written once the handler has returned): nothing was stored.
    await waitForLog(suite.gw, (l) => l.msg === 'request' && l.family === 'files' && l.method === 'POST' && l.aborted === true);
    const list = (await (await fetch(`${suite.gw.url}/${PROJECT}/v1/files?limit=100`, { headers: { authorization: `Bearer ${suite.keys.full}` } })).json()) as { data: { filename: string }[] };
    expect(list.data.map((f) => f.filename)).not.toContain(name);
  });
});
