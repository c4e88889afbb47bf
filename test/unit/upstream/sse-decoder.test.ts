import { describe, expect, it } from 'vitest';
import { SseDecoder } from '../../../src/upstream/sse-decoder.js';

const decode = (chunks: string[]) => {
  const d = new SseDecoder();
  return [...chunks.flatMap((c) => d.push(c)), ...d.flush()];
};

describe('SseDecoder', () => {
  it('yields one event per blank-line-terminated block', () => {
    expect(decode(['data: {"a":1}\n\ndata: [DONE]\n\n'])).toEqual([
      { event: null, data: '{"a":1}' },
      { event: null, data: '[DONE]' },
    ]);
  });

  it('reassembles events split across chunks', () => {
    expect(decode(['da', 'ta: {"c":', '1}\n', '\n'])).toEqual([{ event: null, data: '{"c":1}' }]);
  });

  it('handles CRLF line endings, event names, comments and multi-line data', () => {
    expect(decode([': keep-alive\r\n\r\nevent: error\r\ndata: a\r\ndata: b\r\n\r\ndata:x\r\n\r\n'])).toEqual([
      { event: 'error', data: 'a\nb' },
      { event: null, data: 'x' },
    ]);
  });

  // Regression: pushData handed over the data alone, so a streamed turn could not tell a model server's
  // `event: error` from a chunk, and dropped it.
  it('hands each event to pushData with its name, null for a plain data line', () => {
    const seen: [string, string | null][] = [];
    new SseDecoder().pushData('data: {"a":1}\n\nevent: error\ndata: {"message":"boom"}\n\n', (data, event) => seen.push([data, event]));
    expect(seen).toEqual([
      ['{"a":1}', null],
      ['{"message":"boom"}', 'error'],
    ]);
  });

  it('flushes a final event that lacks the blank line', () => {
    expect(decode(['data: tail'])).toEqual([{ event: null, data: 'tail' }]);
  });
});
