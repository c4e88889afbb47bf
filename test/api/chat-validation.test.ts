import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { PROJECT, WS_C } from '../helpers/configs.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call, expectError } from '../helpers/http.js';
import { simSeq } from '../helpers/simulator-log.js';

const suite = useGatewaySuite();

const user = [{ role: 'user', content: 'hi' }];
const base = { model: 'm', messages: user };
const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };
const toolHistory = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
  { role: 'tool', tool_call_id: 'c1', content: 'ok' },
];

type Case = [label: string, slug: string, body: unknown, status: number, type: string, code: string, param: string | null, headers?: Record<string, string>];

const CASES: Case[] = [
  ['non-null functions', 'chat', { ...base, functions: [{ name: 'f' }] }, 400, 'invalid_request_error', 'unsupported_parameter', 'functions'],
  ['non-null function_call', 'chat', { ...base, function_call: 'auto' }, 400, 'invalid_request_error', 'unsupported_parameter', 'function_call'],
  ['an assistant message carrying function_call', 'chat', { ...base, messages: [...user, { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } }] }, 400, 'invalid_request_error', 'unsupported_parameter', 'messages[1].function_call'],
  ['role function', 'chat', { ...base, messages: [{ role: 'function', name: 'f', content: 'x' }] }, 400, 'invalid_request_error', 'unsupported_value', 'messages[0].role'],
  ['tools on a model without tool support', 'plain', { ...base, tools: [tool] }, 400, 'invalid_request_error', 'unsupported_parameter', 'tools'],
  ['tool-call history on a model without tool support', 'plain', { ...base, messages: toolHistory }, 400, 'invalid_request_error', 'unsupported_parameter', 'messages'],
  ['store: true in a zero-data-retention workspace', 'chat', { ...base, store: true }, 400, 'invalid_request_error', 'retention_not_permitted', 'store', { 'x-workspace-id': WS_C }],
  ['reasoning_effort on a non-reasoning model', 'chat', { ...base, reasoning_effort: 'high' }, 400, 'invalid_request_error', 'unsupported_parameter', 'reasoning_effort'],
  ['reasoning.max_tokens on a non-reasoning model', 'chat', { ...base, reasoning: { max_tokens: 10 } }, 400, 'invalid_request_error', 'unsupported_parameter', 'reasoning.max_tokens'],
  ['reasoning_effort none on a model that always thinks', 'reasoner', { ...base, reasoning_effort: 'none' }, 400, 'invalid_request_error', 'unsupported_value', 'reasoning_effort'],
  ['reasoning_effort and reasoning.effort that disagree', 'reasoner', { ...base, reasoning_effort: 'low', reasoning: { effort: 'high' } }, 400, 'invalid_request_error', 'invalid_request', 'reasoning.effort'],
  ['an unknown reasoning_effort', 'reasoner', { ...base, reasoning_effort: 'extreme' }, 400, 'invalid_request_error', 'invalid_request', 'reasoning_effort'],
  ['five stop sequences', 'chat', { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 400, 'invalid_request_error', 'invalid_request', 'stop'],
  ['a stop sequence over 256 characters', 'chat', { ...base, stop: 'x'.repeat(257) }, 400, 'invalid_request_error', 'invalid_request', 'stop'],
  ['17 metadata pairs', 'chat', { ...base, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 400, 'invalid_request_error', 'invalid_request', 'metadata'],
  ['a metadata value over 512 characters', 'chat', { ...base, metadata: { k: 'v'.repeat(513) } }, 400, 'invalid_request_error', 'invalid_request', 'metadata'],
  ['top_logprobs without logprobs', 'chat', { ...base, top_logprobs: 2 }, 400, 'invalid_request_error', 'invalid_request', 'top_logprobs'],
  ['top_logprobs over 20', 'chat', { ...base, logprobs: true, top_logprobs: 21 }, 400, 'invalid_request_error', 'invalid_request', 'top_logprobs'],
  ['a logit_bias over 100', 'chat', { ...base, logit_bias: { '42': 101 } }, 400, 'invalid_request_error', 'invalid_request', 'logit_bias'],
  ['n above 1 when streaming', 'chat', { ...base, stream: true, n: 2 }, 400, 'invalid_request_error', 'invalid_request', 'n'],
  ['max_tokens 0', 'chat', { ...base, max_tokens: 0 }, 400, 'invalid_request_error', 'invalid_request', 'max_tokens'],
  ['a negative max_completion_tokens', 'chat', { ...base, max_completion_tokens: -5 }, 400, 'invalid_request_error', 'invalid_request', 'max_completion_tokens'],
  ['temperature 2.5', 'chat', { ...base, temperature: 2.5 }, 400, 'invalid_request_error', 'invalid_request', 'temperature'],
  ['top_p 1.5', 'chat', { ...base, top_p: 1.5 }, 400, 'invalid_request_error', 'invalid_request', 'top_p'],
  ['repetition_penalty 0', 'chat', { ...base, repetition_penalty: 0 }, 400, 'invalid_request_error', 'invalid_request', 'repetition_penalty'],
  ['an image part for a model without vision', 'chat', { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }, 400, 'invalid_request_error', 'invalid_request', 'messages[0].content[0]'],
  ['an audio part for a model without audio input', 'chat', { ...base, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] }, 400, 'invalid_request_error', 'invalid_request', 'messages[0].content[0]'],
  ['audio output without a speech endpoint', 'chat', { ...base, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, 400, 'invalid_request_error', 'invalid_request', 'modalities'],
  ['a prediction that is not content', 'chat', { ...base, prediction: { type: 'text', content: 'x' } }, 400, 'invalid_request_error', 'invalid_request', 'prediction.type'],
  ['response_format json_schema without a schema object', 'chat', { ...base, response_format: { type: 'json_schema' } }, 400, 'invalid_request_error', 'invalid_request', 'response_format.json_schema'],
  ['a tool_choice naming an undeclared function', 'chat', { ...base, tools: [tool], tool_choice: { type: 'function', function: { name: 'g' } } }, 400, 'invalid_request_error', 'invalid_request', 'tool_choice'],
  ['a tool message without tool_call_id', 'chat', { ...base, messages: [...user, { role: 'tool', content: 'x' }] }, 400, 'invalid_request_error', 'invalid_request', 'messages[1].tool_call_id'],
  ['an empty messages array', 'chat', { model: 'm', messages: [] }, 400, 'invalid_request_error', 'invalid_request', 'messages'],
  ['a missing model', 'chat', { messages: user }, 400, 'invalid_request_error', 'invalid_request', 'model'],
  ['a body that is not an object', 'chat', [1, 2], 400, 'invalid_request_error', 'invalid_request', null],
  ['a body that is not JSON', 'chat', '{"model":', 400, 'invalid_request_error', 'invalid_json', null],
  ['an embedding endpoint', 'embed', base, 400, 'invalid_request_error', 'invalid_request', null],
  ['a suspended endpoint', 'paused', base, 503, 'server_error', 'endpoint_unavailable', null],
  // 300,000 bad tool calls in one message (2.4 MB): diagnosed whole, zod overflowed its stack and the answer was a 500.
  ['a huge list of bad tool calls in one message', 'chat', { ...base, messages: [...user, { role: 'assistant', content: null, tool_calls: Array.from({ length: 300_000 }, () => 1) }] }, 400, 'invalid_request_error', 'invalid_request', 'messages[1].tool_calls[0]'],
  ['an input that clearly exceeds the window', 'small', { ...base, max_tokens: 10, messages: [{ role: 'user', content: 'word '.repeat(400) }] }, 400, 'invalid_request_error', 'context_length_exceeded', 'max_tokens'],
];

describe('validation at the edge', () => {
  it.each(CASES)('refuses %s before the upstream sees anything', async (_label, slug, body, status, type, code, param, headers) => {
    const before = await simSeq(suite.sim.url);
    const res = await call(`${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`, { key: suite.keys.full, body: body as object, ...(headers ? { headers } : {}) });
    expectError(res, status, code, param);
    expect((res.body as { error: { type: string } }).error.type).toBe(type);
    expect(await simSeq(suite.sim.url)).toBe(before);
  });

  it('refuses a prompt far over the window without counting all of it', async () => {
    // 600 KB of one CJK run against a 256-token window: counted whole it held a pool thread for seconds
    // (~10 s at 8 MB); counting stops past twice the window, and the message says "over".
    const res = await call(`${suite.gw.url}/${PROJECT}/small/v1/chat/completions`, { key: suite.keys.full, body: { ...base, messages: [{ role: 'user', content: '中'.repeat(200_000) }] } });
    expectError(res, 400, 'context_length_exceeded', 'messages');
    expect((res.body as { error: { message: string } }).error.message).toMatch(/the input alone is over \d+ tokens/);
  });

  it('lists the supported values when an effort cannot be honoured', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/reasoner/v1/chat/completions`, { key: suite.keys.full, body: { ...base, reasoning_effort: 'none' } });
    expect((res.body as { error: { message: string } }).error.message).toMatch(/low.*medium.*high/);
  });

  it.each([
    ['a gzip-compressed body', gzipSync(JSON.stringify(base)), /gzip-compressed.*send the JSON uncompressed/],
    ['a binary body', Buffer.from([0x01, 0x02, 0xff, 0xfe, 0x00]), /not valid JSON: Unexpected token '\\u0001'/],
  ])('answers %s with invalid_json in a message that is plain text', async (_label, body, message) => {
    const res = await fetch(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', ...(body[0] === 0x1f ? { 'content-encoding': 'gzip' } : {}) },
      body,
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('invalid_json');
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/);
  });

});
