import { describe, expect, it } from 'vitest';
import { parseBatchLine, splitJsonl, type ParsedLine } from '../../../../src/core/batches/batch-lines.js';

const chat = (customId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, ...extra });

const errorOf = (p: ParsedLine) => (p.ok ? null : p.error);

describe('batch input lines', () => {
  it('accepts a well-formed chat line and keeps its body and model', () => {
    const parsed = parseBatchLine(chat('a'), '/v1/chat/completions', new Set());
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.line.customId).toBe('a');
    expect(parsed.line.model).toBe('m');
    expect(JSON.parse(parsed.line.body.toString('utf8'))).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('refuses a line that is not JSON, not an object, or lacks custom_id', () => {
    expect(errorOf(parseBatchLine('{nope', '/v1/chat/completions', new Set()))?.code).toBe('invalid_json');
    expect(errorOf(parseBatchLine('[1]', '/v1/chat/completions', new Set()))?.code).toBe('invalid_request');
    expect(errorOf(parseBatchLine(JSON.stringify({ method: 'POST' }), '/v1/chat/completions', new Set()))).toMatchObject({ code: 'invalid_request', customId: null });
  });

  it('refuses a method other than POST, an unknown url, and a url other than the batch endpoint', () => {
    expect(errorOf(parseBatchLine(chat('a', { method: 'GET' }), '/v1/chat/completions', new Set()))).toMatchObject({ code: 'invalid_request', customId: 'a' });
    expect(errorOf(parseBatchLine(chat('a', { url: '/v1/completions' }), '/v1/chat/completions', new Set()))?.message).toContain('url must be one of');
    expect(errorOf(parseBatchLine(chat('a', { url: '/v1/embeddings' }), '/v1/chat/completions', new Set()))?.code).toBe('mismatched_endpoint');
  });

  it('refuses a body without a model, a non-object body and a streamed body', () => {
    expect(errorOf(parseBatchLine(chat('a', { body: { messages: [] } }), '/v1/chat/completions', new Set()))?.message).toContain('body.model');
    expect(errorOf(parseBatchLine(chat('a', { body: 'x' }), '/v1/chat/completions', new Set()))?.message).toContain('body must be');
    expect(errorOf(parseBatchLine(chat('a', { body: { model: 'm', stream: true } }), '/v1/chat/completions', new Set()))?.message).toContain('stream');
  });

  it('fails the later line of a repeated custom_id, not the first', () => {
    const seen = new Set<string>();
    expect(parseBatchLine(chat('a'), '/v1/chat/completions', seen).ok).toBe(true);
    expect(errorOf(parseBatchLine(chat('a'), '/v1/chat/completions', seen))?.code).toBe('duplicate_custom_id');
  });

  it('splits JSONL on LF and CRLF and skips blank lines', () => {
    expect(splitJsonl('{"a":1}\r\n\n  \n{"b":2}\n')).toEqual(['{"a":1}', '{"b":2}']);
  });
});
