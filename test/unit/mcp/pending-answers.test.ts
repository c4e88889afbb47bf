import { describe, expect, it } from 'vitest';
import { PendingAnswers } from '../../../src/mcp/pending-answers.js';

const event = (message: unknown): Uint8Array => new TextEncoder().encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);

function watched(ids: string[]): { pending: PendingAnswers; ended: () => number } {
  const pending = new PendingAnswers(ids);
  let ends = 0;
  pending.attach(() => (ends += 1));
  return { pending, ended: () => ends };
}

describe('PendingAnswers', () => {
  it('ends the stream once every request is answered or cancelled, in any order', () => {
    const { pending, ended } = watched(['1', '"b"', '3']);
    pending.sent(event({ jsonrpc: '2.0', id: 'b', result: {} }));
    pending.cancelled('1');
    expect(ended()).toBe(0);
    pending.sent(event({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'no' } }));
    expect(ended()).toBe(1);
  });

  it('ends a stream at once when its requests were all cancelled before it opened', () => {
    const pending = new PendingAnswers(['7']);
    pending.cancelled('7');
    let ends = 0;
    pending.attach(() => (ends += 1));
    expect(ends).toBe(1);
  });

  it('reads an answer split across chunks, and is not settled by notifications, requests or comments', () => {
    const { pending, ended } = watched(['5']);
    pending.sent(new TextEncoder().encode(': keepalive\n\n'));
    pending.sent(event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 5 } }));
    pending.sent(event({ jsonrpc: '2.0', id: 5, method: 'sampling/createMessage' }));
    const bytes = event({ jsonrpc: '2.0', id: 5, result: { content: [] } });
    pending.sent(bytes.subarray(0, 20));
    expect(ended()).toBe(0);
    pending.sent(bytes.subarray(20));
    expect(ended()).toBe(1);
  });

  it('tells a numeric id from a string one', () => {
    const { pending, ended } = watched(['5']);
    pending.sent(event({ jsonrpc: '2.0', id: '5', result: {} }));
    expect(ended()).toBe(0);
  });
});
