import { describe, expect, it } from 'vitest';
import { applyPartEdits, partPath } from '../../../../src/core/chat/part-edits.js';

const RAW = '{"model":"m",  "temperature":0.50,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"text","text":"and"},{"type":"input_audio","input_audio":{"data":"BBBB","format":"mp3"}}]}]}';

describe('applyPartEdits', () => {
  it('replaces only the edited parts, keeping every byte outside messages', () => {
    const parsed = JSON.parse(RAW) as Record<string, unknown>;
    const out = applyPartEdits(Buffer.from(RAW), parsed, [
      { message: 1, part: 0, value: { type: 'text', text: 'first' } },
      { message: 1, part: 2, value: { type: 'text', text: 'second' } },
    ]);
    const messages = '[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"and"},{"type":"text","text":"second"}]}]';
    expect(out.raw.toString()).toBe(`{"model":"m",  "temperature":0.50,"messages":${messages}}`);
    expect(out.parsed.messages).toEqual(JSON.parse(messages));
  });

  it('leaves the parsed body untouched (the caller may still read it)', () => {
    const parsed = JSON.parse(RAW) as Record<string, unknown>;
    const before = structuredClone(parsed);
    applyPartEdits(Buffer.from(RAW), parsed, [{ message: 1, part: 1, value: { type: 'text', text: 'x' } }]);
    expect(parsed).toEqual(before);
  });

  it('returns the same bytes when there is nothing to edit', () => {
    const raw = Buffer.from(RAW);
    expect(applyPartEdits(raw, {}, []).raw).toBe(raw);
  });

  it('names parts by their SPEC path', () => {
    expect(partPath(2, 0)).toBe('messages[2].content[0]');
  });
});
