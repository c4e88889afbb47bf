import { describe, expect, it } from 'vitest';
import { appendOutput, cappedOf, EMPTY_OUTPUT } from '../../../../src/core/exec/output-cap.js';

describe('invocation output cap', () => {
  it('keeps output under the cap whole', () => {
    const { output, added } = appendOutput(appendOutput(EMPTY_OUTPUT, 'abc', 10).output, 'def', 10);
    expect(output).toEqual({ text: 'abcdef', bytes: 6, truncated: false });
    expect(added).toBe('def');
  });

  it('cuts at the cap in bytes and says so; later chunks are dropped', () => {
    const first = appendOutput(EMPTY_OUTPUT, '0123456789ab', 10);
    expect(first.output).toEqual({ text: '0123456789', bytes: 10, truncated: true });
    expect(first.added).toBe('0123456789');
    expect(appendOutput(first.output, 'more', 10)).toEqual({ output: first.output, added: '' });
  });

  it('never cuts inside a multi-byte character', () => {
    const { output } = appendOutput(EMPTY_OUTPUT, 'ab€€', 6);
    expect(output.text).toBe('ab€');
    expect(output.bytes).toBe(5);
    expect(output.truncated).toBe(true);
    expect(appendOutput(EMPTY_OUTPUT, '😀😀', 5).output.text).toBe('😀');
  });

  it('counts stored text in bytes when it is loaded again', () => {
    expect(cappedOf('€', false)).toEqual({ text: '€', bytes: 3, truncated: false });
  });
});
