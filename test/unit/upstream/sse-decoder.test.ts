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

  // Was: only \n\n and \r\n\r\n ended an event, so a server ending lines with a lone CR (legal SSE) had
  // every event held until the stream ended, and a CR-ended event in a mixed stream was lost.
  it('ends lines at a lone CR, as the SSE spec allows', () => {
    expect(decode(['data: a\r\rdata: b\r\revent: x\rdata: c\rdata: d\r\r'])).toEqual([
      { event: null, data: 'a' },
      { event: null, data: 'b' },
      { event: 'x', data: 'c\nd' },
    ]);
  });

  it('reads a stream that mixes LF, CRLF and CR line ends, every event in order', () => {
    expect(decode(['data: 1\n\ndata: 2\r\rdata: 3\r\n\r\ndata: 4\r\n\ndata: 5\n\r\ndata: 6\r\r\n: c\rdata: 7\r\n\r'])).toEqual(
      ['1', '2', '3', '4', '5', '6', '7'].map((data) => ({ event: null, data })),
    );
  });

  it('hands over an event whose closing CR ends a read at once, and reads the next read opening with its LF as the pair', () => {
    const d = new SseDecoder();
    expect(d.push('data: a\r\n\r')).toEqual([{ event: null, data: 'a' }]);
    expect(d.push('\ndata: b\r')).toEqual([]);
    expect(d.push('')).toEqual([]);
    expect(d.push('\n\r\n')).toEqual([{ event: null, data: 'b' }]);
    expect(d.push('data: c\r')).toEqual([]);
    expect(d.push('\rdata: d\n\n')).toEqual([
      { event: null, data: 'c' },
      { event: null, data: 'd' },
    ]);
  });

  it('gives pushData the same data as push for every cut of a mixed stream', () => {
    const stream = 'data: {"a":1}\r\revent: e\r\ndata: x\r\n\r\ndata: y\n\r\ndata: z\r';
    for (let cut = 0; cut <= stream.length; cut++) {
      const d = new SseDecoder();
      const seen: string[] = [];
      for (const piece of [stream.slice(0, cut), stream.slice(cut)]) d.pushData(piece, (data) => seen.push(data));
      seen.push(...d.flush().map((e) => e.data));
      expect(seen, `cut at ${cut}`).toEqual(['{"a":1}', 'x', 'y', 'z']);
    }
  });
});

