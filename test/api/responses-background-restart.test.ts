/**
 * docs/decisions.md "Background responses": a background response whose turn was in flight when the
 * gateway died is not left in_progress forever. The next start fails it with error code `interrupted`
 * (it is not run again: the model may already have done the work) and emits response.failed; a graceful
 * stop fails the ones still running itself, without waiting for their model.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { startHeldUpstream, type HeldUpstream } from '../helpers/held-upstream.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const keys = makeKeys();
const dir = tempDir();
const dbPath = join(dir, 'switchboard.db');
let held: HeldUpstream;
let receiver: Receiver;
let gw: GatewayProcess | null = null;
/** The background response the first test leaves running. */
let probeId = '';

beforeAll(async () => {
  held = await startHeldUpstream();
  receiver = await startReceiver();
});

afterAll(async () => {
  await gw?.stop();
  await held?.close();
  await receiver?.close();
});

type Response = { id: string; status: string; background: boolean; error: { code: string; message: string } | null };

describe('a background response in flight when the gateway dies', () => {
  it('is failed "interrupted" at the next start, with response.failed, and is not sent to the model again', async () => {
    const config = testConfig(held.url, keys, { security: { allow_private_targets: true, allow_http_targets: true }, webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 } });
    gw = await startGatewayProcess(config, { dir, dbPath });
    const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['response.failed'] } });
    expect(hook.status).toBe(201);
    const created = await call(`${gw.url}/${PROJECT}/v1/responses`, { key: keys.full, body: { model: 'model-chat', input: 'a long job', background: true } });
    expect(created.body).toMatchObject({ status: 'queued', background: true });
    const id = (created.body as Response).id;
    const upstream = await held.next();
    expect((await call(`${gw.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full })).body).toMatchObject({ status: 'in_progress' });

    await gw.stop('SIGKILL');
    await upstream.abandoned;
    gw = await startGatewayProcess(config, { dir, dbPath });

    const after = await call(`${gw.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full });
    expect(after.body).toMatchObject({ id, status: 'failed', background: true, error: { code: 'interrupted' } });
    expect((after.body as Response).error?.message).toContain('not run again');
    const [delivery] = await receiver.waitFor(1);
    expect(delivery?.body).toMatchObject({ type: 'response.failed', data: { id } });
    const cancel = await call(`${gw.url}/${PROJECT}/v1/responses/${id}/cancel`, { method: 'POST', key: keys.full });
    expect(cancel.status).toBe(400);
    expect((cancel.body as { error: { message: string } }).error.message).toContain('already failed');
    // Nothing was sent to the model again: a new request is the next one the held server sees.
    const next = held.next();
    const probe = await call(`${gw.url}/${PROJECT}/v1/responses`, { key: keys.full, body: { model: 'model-chat', input: 'probe', background: true } });
    expect(JSON.parse((await next).body)).toMatchObject({ messages: [{ role: 'user', content: 'probe' }] });
    expect(probe.status).toBe(200);
    probeId = (probe.body as Response).id;
  });

  it('a graceful stop does not wait on a running background turn: it is failed "interrupted" at once', async () => {
    const config = testConfig(held.url, keys, { security: { allow_private_targets: true, allow_http_targets: true } });
    expect(await gw?.stop('SIGTERM')).toBe(0);
    gw = await startGatewayProcess(config, { dir, dbPath });
    const after = await call(`${gw.url}/${PROJECT}/v1/responses/${probeId}`, { key: keys.full });
    expect(after.body).toMatchObject({ id: probeId, status: 'failed', error: { code: 'interrupted' } });
  });
});
