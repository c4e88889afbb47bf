import { describe, expect, it } from 'vitest';
import { resolveHarness } from '../../../../src/core/chat/header-flags.js';
import { chatBodyOf, chatHeadersOf, parsePlaygroundTurn } from '../../../../src/dashboard/playground/turn-request.js';
import { GatewayError } from '../../../../src/errors.js';

const base = { target: { kind: 'router' }, messages: [{ role: 'user', content: 'hi' }] };

function refusal(body: unknown): GatewayError {
  try {
    parsePlaygroundTurn(body);
  } catch (err) {
    if (err instanceof GatewayError) return err;
  }
  throw new Error('expected a refusal');
}

describe('a playground turn as a chat request', () => {
  it('becomes a streamed chat body with the usage chunk asked for', () => {
    const turn = parsePlaygroundTurn({ ...base, max_tokens: 7 });
    expect(chatBodyOf(turn, 'model-x')).toEqual({ model: 'model-x', messages: base.messages, stream: true, stream_options: { include_usage: true }, max_tokens: 7 });
  });

  it('sends no harness header when no switch was set, so the surface default (on) decides', () => {
    const headers = chatHeadersOf(parsePlaygroundTurn(base));
    expect(Object.keys(headers).filter((h) => h.startsWith('x-service-'))).toEqual([]);
    const flags = resolveHarness(headers, true);
    expect(flags.maxTokensFloor).toBe(true);
    expect(flags.toolTopK).toBe(false);
  });

  it('maps each switch onto its SPEC header, and a feature switch wins over X-Service-Augment', () => {
    const turn = parsePlaygroundTurn({ ...base, workspace: 'ws_0a1b2c', conversation_id: 'pg_1', harness: { augment: false, features: { maxTokensFloor: true, compression: false } } });
    const headers = chatHeadersOf(turn);
    expect(headers).toMatchObject({
      'x-workspace-id': 'ws_0a1b2c',
      'x-conversation-id': 'pg_1',
      'x-service-augment': 'off',
      'x-service-augment-max-tokens-floor': 'on',
      'x-service-compression': 'off',
    });
    const flags = resolveHarness(headers, true);
    expect(flags.maxTokensFloor).toBe(true);
    expect(flags.compaction).toBe(false);
  });

  it('refuses a malformed turn naming the field', () => {
    expect(refusal({ ...base, messages: [] })).toMatchObject({ code: 'invalid_request', param: 'messages' });
    expect(refusal({ ...base, target: { kind: 'endpoint' } })).toMatchObject({ code: 'invalid_request', param: 'target.endpoint' });
    expect(refusal({ ...base, harness: { features: { warpDrive: true } } })).toMatchObject({ code: 'invalid_request' });
  });
});
