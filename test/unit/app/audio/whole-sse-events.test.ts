import { describe, expect, it } from 'vitest';
import { WholeSseEvents } from '../../../../src/app/audio/whole-sse-events.js';

const text = (b: Buffer): string => b.toString('utf8');

describe('WholeSseEvents', () => {
  it('sends whole events at once and holds back an event until its blank line arrives', () => {
    const e = new WholeSseEvents();
    expect(text(e.push(Buffer.from('data: {"a":1}\n\ndata: {"b"')))).toBe('data: {"a":1}\n\n');
    expect(text(e.push(Buffer.from(':2}\n')))).toBe('');
    expect(text(e.push(Buffer.from('\n')))).toBe('data: {"b":2}\n\n');
    expect(text(e.rest())).toBe('');
  });

  it('recognizes CRLF and CR event ends, also split across reads', () => {
    const e = new WholeSseEvents();
    expect(text(e.push(Buffer.from('data: x\r\n\r')))).toBe('');
    expect(text(e.push(Buffer.from('\ndata: y\r\r')))).toBe('data: x\r\n\r\ndata: y\r\r');
  });

  it('drops half an event from a cut stream: the closing frames follow the last whole one', () => {
    const e = new WholeSseEvents();
    expect(text(e.push(Buffer.from('data: {"a":1}\n\ndata: {"cut')))).toBe('data: {"a":1}\n\n');
    expect(e.closing('data: [DONE]\n\n')).toBe('data: [DONE]\n\n');
  });

  it('passes an event over 1 MiB through as it comes, and ends it with a blank line if it is cut', () => {
    const e = new WholeSseEvents();
    const big = Buffer.from(`data: "${'x'.repeat(1024 * 1024)}`);
    expect(e.push(big).length).toBe(big.length);
    expect(e.closing('data: [DONE]\n\n')).toBe('\n\ndata: [DONE]\n\n');
    expect(text(e.push(Buffer.from('"\n\n')))).toBe('"\n\n');
    expect(e.closing('data: [DONE]\n\n')).toBe('data: [DONE]\n\n');
  });

  it('hands over what a stream that ended normally sent last, as it is', () => {
    const e = new WholeSseEvents();
    e.push(Buffer.from('data: {"a":1}\n\ndata: tail'));
    expect(text(e.rest())).toBe('data: tail');
  });
});
