import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { computeSignature, verifyWebhook } from '../../src/webhooks-verify.js';

const secret = 'whsec_test-secret';
const body = '{"id":"evt_0123456789abcdef01234567","object":"event","type":"exec.completed","created_at":1700000000,"data":{}}';
const ts = 1_700_000_000;
const headers = (signature = computeSignature(secret, ts, body), timestamp = String(ts)) => ({
  'x-webhook-timestamp': timestamp,
  'x-webhook-signature': signature,
});

describe('verifyWebhook', () => {
  it('accepts a delivery signed with the secret over "<timestamp>.<raw body>"', () => {
    expect(verifyWebhook(secret, body, headers(), { now: ts + 10 })).toEqual({ ok: true, timestamp: ts });
  });

  it('accepts the raw body as bytes and headers as a fetch Headers object', () => {
    const h = new Headers(headers());
    expect(verifyWebhook(secret, Buffer.from(body), h, { now: ts })).toMatchObject({ ok: true });
  });

  it('matches an HMAC computed independently of this module', async () => {
    const { createHmac } = await import('node:crypto');
    const expected = `sha256=${createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')}`;
    expect(computeSignature(secret, ts, body)).toBe(expected);
  });

  it.each([
    ['a body changed by one byte', () => verifyWebhook(secret, body.replace('}', ' }'), headers(), { now: ts }), 'signature_mismatch'],
    ['another secret', () => verifyWebhook('whsec_other', body, headers(), { now: ts }), 'signature_mismatch'],
    ['a timestamp changed after signing', () => verifyWebhook(secret, body, headers(undefined, String(ts + 1)), { now: ts }), 'signature_mismatch'],
    ['a timestamp 301 s old', () => verifyWebhook(secret, body, headers(), { now: ts + 301 }), 'timestamp_out_of_tolerance'],
    ['a timestamp 301 s ahead', () => verifyWebhook(secret, body, headers(), { now: ts - 301 }), 'timestamp_out_of_tolerance'],
    ['no signature header', () => verifyWebhook(secret, body, { 'x-webhook-timestamp': String(ts) }, { now: ts }), 'missing_headers'],
    ['a timestamp that is not a number', () => verifyWebhook(secret, body, headers(undefined, 'soon'), { now: ts }), 'malformed_timestamp'],
    ['a signature without the sha256= prefix', () => verifyWebhook(secret, body, headers('abc'), { now: ts }), 'malformed_signature'],
    ['a truncated signature', () => verifyWebhook(secret, body, headers(computeSignature(secret, ts, body).slice(0, -2)), { now: ts }), 'malformed_signature'],
  ])('rejects %s', (_what, run, reason) => {
    expect(run()).toMatchObject({ ok: false, reason });
  });

  it('accepts exactly 300 s of skew and honours a configured tolerance', () => {
    expect(verifyWebhook(secret, body, headers(), { now: ts + 300 }).ok).toBe(true);
    expect(verifyWebhook(secret, body, headers(), { now: ts + 30, toleranceSeconds: 10 }).ok).toBe(false);
  });
});

describe('the package export', () => {
  it('is importable by receivers as switchboard/webhooks (package.json exports, built dist/)', () => {
    const script = "import { verifyWebhook, computeSignature } from 'switchboard/webhooks'; console.log(typeof verifyWebhook, typeof computeSignature);";
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8' });
    expect(out.trim()).toBe('function function');
  });
});
