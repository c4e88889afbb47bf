import { describe, expect, it } from 'vitest';
import { removeTopLevel, spliceTopLevel } from '../../../src/core/json-splice.js';

const model = (v: string): Map<string, string> => new Map([['model', JSON.stringify(v)]]);
const splice = (text: string, v = 'upstream'): string | null => spliceTopLevel(Buffer.from(text), model(v))?.toString() ?? null;

describe('spliceTopLevel', () => {
  it('replaces only the model value and keeps every other byte', () => {
    const body = '{ "model" : "gpt-x",\n  "temperature": 1.0, "messages":[{"role":"user","content":"caf\\u00e9 {\\"model\\": 1}"}] }';
    expect(splice(body)).toBe(body.replace('"gpt-x"', '"upstream"'));
  });

  it('ignores a nested field with the same name', () => {
    const body = '{"metadata":{"model":"inner"},"model":"outer","tools":[{"model":"x"}]}';
    expect(splice(body)).toBe('{"metadata":{"model":"inner"},"model":"upstream","tools":[{"model":"x"}]}');
  });

  it('replaces every top-level duplicate so a client cannot smuggle its own model', () => {
    expect(splice('{"model":"a","n":1,"model":"b"}')).toBe('{"model":"upstream","n":1,"model":"upstream"}');
  });

  it('finds a key spelled with escapes', () => {
    expect(splice('{"mod\\u0065l":"a"}')).toBe('{"mod\\u0065l":"upstream"}');
  });

  it('handles multi-byte UTF-8 around the value', () => {
    const body = '{"messages":[{"content":"日本語 \\"quoted\\" ✓"}],"model":"ü"}';
    expect(splice(body, 'ß')).toBe('{"messages":[{"content":"日本語 \\"quoted\\" ✓"}],"model":"ß"}');
  });

  it('crosses long strings with escaped quotes and backslash runs exactly', () => {
    const long = `${'x'.repeat(40)}\\"model\\":\\"y\\" ${'z'.repeat(40)}\\\\`;
    const body = `{"messages":[{"content":"${long}"}],"note":"${'q'.repeat(50)}\\\\\\"","model":"m"}`;
    expect(JSON.parse(body)).toBeTruthy();
    expect(splice(body)).toBe(body.replace('"model":"m"', '"model":"upstream"'));
  });

  it('replaces non-string values too', () => {
    const out = spliceTopLevel(Buffer.from('{"max_tokens":900,"model":"m"}'), new Map([['max_tokens', '12']]));
    expect(out?.toString()).toBe('{"max_tokens":12,"model":"m"}');
  });

  it.each(['[]', '"model"', '{"model":', '{"a" 1}', '{"model":"x"', ''])('returns null for %j, which is not a complete object', (text) => {
    expect(splice(text)).toBeNull();
  });

  it('returns null when the key is absent so the caller can re-serialize', () => {
    expect(splice('{"messages":[]}')).toBeNull();
  });
});

describe('removeTopLevel', () => {
  const remove = (text: string, ...keys: string[]): string | null => removeTopLevel(Buffer.from(text), new Set(keys))?.toString() ?? null;

  it('drops the named members and keeps every other byte', () => {
    const body = '{"model":"m", "modalities":["text","audio"],\n "temperature": 1.0, "audio":{"voice":"alloy"}, "n":1}';
    expect(remove(body, 'modalities', 'audio')).toBe('{"model":"m",\n "temperature": 1.0, "n":1}');
  });

  it.each([
    ['the first member', '{"audio":1, "model":"m"}', '{"model":"m"}'],
    ['the last member', '{"model":"m" , "audio":1 }', '{"model":"m" }'],
    ['every member', '{ "audio":1,"modalities":[] }', '{  }'],
    ['every top-level duplicate', '{"audio":1,"model":"m","audio":2}', '{"model":"m"}'],
  ])('drops %s', (_, body, expected) => {
    const out = remove(body, 'audio', 'modalities');
    expect(out).toBe(expected);
    expect(() => JSON.parse(out ?? '')).not.toThrow();
  });

  it('leaves nested members alone and returns the same buffer when nothing matches', () => {
    const buf = Buffer.from('{"metadata":{"audio":1},"model":"m"}');
    expect(removeTopLevel(buf, new Set(['audio']))).toBe(buf);
  });

  it('returns null for bytes that are not an object', () => {
    expect(remove('[1]', 'audio')).toBeNull();
  });
});
