import { describe, expect, it } from 'vitest';
import { hashKeyValue, isWellFormedKey, KEY_VALUE_PATTERN, keyPrefix, mintKeyValue } from '../../../../src/core/auth/key-token.js';

const TOKEN = 'Zm9vYmFyYmF6cXV4LXF1dXotY29yZ2VfZ3JhdWx0MDE';

/** The random part of a value minted for `slug`. */
function tokenOf(value: string, slug: string): string {
  return value.slice(`svc_${slug}_`.length);
}

describe('mintKeyValue', () => {
  it.each([['demo'], ['my-project-2'], ['mgmt']])('mints svc_%s_<43 base64url characters>', (slug) => {
    const value = mintKeyValue(slug);
    expect(value.startsWith(`svc_${slug}_`)).toBe(true);
    expect(tokenOf(value, slug)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(isWellFormedKey(value)).toBe(true);
  });

  it('draws 256 bits for the token', () => {
    const token = tokenOf(mintKeyValue('demo'), 'demo');
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
  });

  it('never repeats a value across many mints', () => {
    const values = new Set(Array.from({ length: 200 }, () => mintKeyValue('demo')));
    expect(values.size).toBe(200);
  });
});

describe('hashKeyValue', () => {
  it('is the lowercase hex SHA-256 of the value', () => {
    expect(hashKeyValue('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('gives 64 hex characters that differ for values differing in one character', () => {
    const a = hashKeyValue(`svc_demo_${TOKEN}`);
    const b = hashKeyValue(`svc_demo_${TOKEN.slice(0, -1)}F`);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });
});

describe('keyPrefix', () => {
  it.each([
    [`svc_demo_${TOKEN}`, 'svc_demo_Zm9v'],
    [`svc_mgmt_${TOKEN}`, 'svc_mgmt_Zm9v'],
    [`svc_my-project-2_${TOKEN}`, 'svc_my-project-2_Zm9v'],
  ])('shows the slug and only the first 4 token characters of %s', (value, prefix) => {
    expect(keyPrefix(value)).toBe(prefix);
  });
});

describe('isWellFormedKey', () => {
  it.each([
    ['a project key', `svc_demo_${TOKEN}`],
    ['a management key', `svc_mgmt_${TOKEN}`],
    ['a slug with digits and dashes', `svc_p2-x_${TOKEN}`],
    ['a token with - and _', `svc_demo_${'-_'.repeat(21)}A`],
    ['exactly 128 characters', `svc_${'a'.repeat(80)}_${TOKEN}`],
  ])('accepts %s', (_label, value) => {
    expect(isWellFormedKey(value)).toBe(true);
  });

  it.each([
    ['an empty string', ''],
    ['a 42-character token', `svc_demo_${TOKEN.slice(1)}`],
    ['a 44-character token', `svc_demo_${TOKEN}A`],
    ['an uppercase slug', `svc_Demo_${TOKEN}`],
    ['a slug starting with a dash', `svc_-demo_${TOKEN}`],
    ['an empty slug', `svc__${TOKEN}`],
    ['another prefix', `sk_demo_${TOKEN}`],
    ['base64 padding', `svc_demo_${TOKEN.slice(1)}=`],
    ['standard base64 characters', `svc_demo_${TOKEN.slice(1)}+`],
    ['surrounding whitespace', ` svc_demo_${TOKEN}`],
    ['more than 128 characters', `svc_${'a'.repeat(81)}_${TOKEN}`],
  ])('rejects %s', (_label, value) => {
    expect(isWellFormedKey(value)).toBe(false);
  });

  it('agrees with KEY_VALUE_PATTERN below the length cap', () => {
    expect(KEY_VALUE_PATTERN.test(`svc_demo_${TOKEN}`)).toBe(true);
    expect(KEY_VALUE_PATTERN.test(`svc_demo_${TOKEN}A`)).toBe(false);
  });
});
