/**
 * Refusal wording (probe A8): every message reads "<param> <requirement>; got <value>.", never a
 * validator's own text, never a reference to an internal document, with "an" before a vowel.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { call, errorOf, expectError } from '../helpers/http.js';
import { mintTestKey } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';

const execKey = mintTestKey('test');
const suite = useGatewaySuite({ limits: { management_requests_per_minute: 100_000 }, extraKeys: [{ value: execKey, scopes: ['execution'] }] });

const messageOf = async (path: string, body: unknown): Promise<{ status: number; param: unknown; message: string }> => {
  const res = await call(`${suite.gw.url}/${PROJECT}${path}`, { key: suite.keys.full, body: body as object });
  const error = errorOf(res);
  return { status: res.status, param: error.param, message: String(error.message) };
};

describe('validator wording', () => {
  it('phrases batches fields as requirements', async () => {
    expect(await messageOf('/v1/batches', { input_file_id: 'file-x', endpoint: '/v1/chat/completions', completion_window: '1h' })).toEqual({
      status: 400,
      param: 'completion_window',
      message: 'completion_window must be "24h"; got "1h".',
    });
    expect(await messageOf('/v1/batches', { input_file_id: 'file-x', endpoint: '/v1/foo', completion_window: '24h' })).toEqual({
      status: 400,
      param: 'endpoint',
      message: expect.stringMatching(/^endpoint must be one of "\/v1\/chat\/completions", "\/v1\/embeddings"[^|]*; got "\/v1\/foo"\.$/),
    });
  });

  it('phrases uploads fields as requirements', async () => {
    expect(await messageOf('/v1/uploads', {})).toEqual({ status: 400, param: 'filename', message: 'filename must be a string; got nothing.' });
    expect(await messageOf('/v1/uploads', { filename: '' })).toMatchObject({ param: 'filename', message: 'filename must be a non-empty string; got "".' });
    expect(await messageOf('/v1/uploads', { filename: 'a.jsonl', purpose: 'batch', bytes: -1, mime_type: 'text/plain' })).toMatchObject({
      param: 'bytes',
      message: 'bytes must be greater than 0; got -1.',
    });
  });

  it('lists the event types instead of citing a document', async () => {
    const r = await messageOf('/v1/webhooks', { url: 'https://example.com/hooks', events: ['nope.thing'] });
    expect(r).toMatchObject({ status: 400, param: 'events[0]' });
    expect(r.message).toMatch(/^events\[0\] must be one of the event types: exec\.dispatched, exec\.completed, .*; got "nope\.thing"\.$/);
    expect(r.message).not.toContain('SPEC');
  });

  it('describes one scope at scopes[i], the array at scopes', async () => {
    expect(await messageOf('/v1/management/api-keys', { scopes: ['admin'] })).toMatchObject({
      param: 'scopes[0]',
      message: expect.stringMatching(/^scopes\[0\] must be one of the scopes inference, .*; got "admin"\.$/),
    });
    expect((await messageOf('/v1/management/api-keys', { scopes: [] })).message).toMatch(/^scopes must be a non-empty array of scopes/);
  });
});

describe('bodies that take no fields', () => {
  it('say so instead of listing none ("the fields are .")', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/exec/approvals/app_000000000000000000000000/accept`, { key: execKey, body: { note: 'x' } });
    expectError(res, 400, 'invalid_body', 'note');
    expect(errorOf(res).message).toBe('note is not a field of this request; this request takes no fields (send {} or no body).');
  });
});

describe('articles', () => {
  it('says "an embedding endpoint" and "an image_url part"', async () => {
    const onEmbed = await call(`${suite.gw.url}/${PROJECT}/embed/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'x' }] } });
    expect(String(errorOf(onEmbed).message)).toContain('is an embedding endpoint');
    const image = await call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] },
    });
    expectError(image, 400, 'invalid_request', 'messages[0].content[0]');
    expect(String(errorOf(image).message)).toContain('is an image_url part');
  });
});
