import { describe, expect, it } from 'vitest';
import { compileIpFilter, ipAllowed, ipOrCidrSchema, parseAddress, parseRange } from '../../../../src/core/auth/ip-filter.js';

/** A range rendered back to `address/bits` text, or null. */
function rangeText(text: string): string | null {
  const range = parseRange(text);
  return range ? `${range[0].toString()}/${range[1]}` : null;
}

describe('parseAddress', () => {
  it.each([
    ['10.0.0.5', 'ipv4', '10.0.0.5'],
    ['2001:db8::1', 'ipv6', '2001:db8::1'],
    ['::ffff:10.0.0.5', 'ipv4', '10.0.0.5'],
  ])('parses %s as %s %s', (text, kind, rendered) => {
    const addr = parseAddress(text);
    expect(addr?.kind()).toBe(kind);
    expect(addr?.toString()).toBe(rendered);
  });

  it.each([[''], ['localhost'], ['10.0.0.256'], ['2001:db8::1::2'], ['10.0.0.0/8']])('returns null for %j', (text) => {
    expect(parseAddress(text)).toBeNull();
  });
});

describe('parseRange', () => {
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['198.51.100.7', '198.51.100.7/32'],
    ['2001:db8::/32', '2001:db8::/32'],
    ['2001:db8::1', '2001:db8::1/128'],
    ['::ffff:10.0.0.5', '10.0.0.5/32'],
    ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
  ])('reads %s as %s', (text, expected) => {
    expect(rangeText(text)).toBe(expected);
  });

  it.each([['10.0.0.0/33'], ['2001:db8::/129'], ['10.0.0.0/'], ['10.0.0.0/x'], ['not-an-ip'], ['']])('rejects %j', (text) => {
    expect(parseRange(text)).toBeNull();
  });

  it('backs the config schema for allowed_ips entries', () => {
    expect(ipOrCidrSchema.safeParse('10.0.0.0/8').success).toBe(true);
    expect(ipOrCidrSchema.safeParse('10.0.0.0/33').success).toBe(false);
  });
});

describe('compileIpFilter', () => {
  it('returns no filter when both lists are empty', () => {
    expect(compileIpFilter([], [])).toBeNull();
  });

  it('compiles each list into ranges', () => {
    const filter = compileIpFilter(['10.0.0.0/8', '2001:db8::/32'], ['10.0.0.5']);
    expect(filter?.allowed).toHaveLength(2);
    expect(filter?.blocked).toHaveLength(1);
  });

  // Regression: an unparsable stored entry used to be dropped, leaving an empty allowlist that admits everyone.
  it('fails closed when a stored entry no longer parses', () => {
    const filter = compileIpFilter(['garbage'], []);
    expect(ipAllowed(filter, '10.0.0.1')).toBe(false);
    expect(ipAllowed(compileIpFilter([], ['garbage']), '10.0.0.1')).toBe(false);
  });

  it('rejects legacy IPv4 spellings that would mean another address', () => {
    expect(parseRange('010.0.0.1')).toBeNull();
    expect(parseRange('0x0a.0.0.1')).toBeNull();
    expect(parseRange('10.1')).toBeNull();
    expect(parseAddress('1')).toBeNull();
  });
});

describe('ipAllowed', () => {
  it('allows any address, even an unparseable one, without a filter', () => {
    expect(ipAllowed(null, '192.0.2.1')).toBe(true);
    expect(ipAllowed(null, 'garbage')).toBe(true);
  });

  it.each<[string, string[], string[], string, boolean]>([
    ['allows an address inside the allowlist', ['10.0.0.0/8'], [], '10.1.2.3', true],
    ['refuses an address outside the allowlist', ['10.0.0.0/8'], [], '11.0.0.1', false],
    ['refuses an address in both lists (the blocklist wins)', ['10.0.0.0/8'], ['10.0.0.0/24'], '10.0.0.9', false],
    ['allows an allowlisted address next to a blocked one', ['10.0.0.0/8'], ['10.0.0.5'], '10.0.0.6', true],
    ['allows any address outside a lone blocklist', [], ['10.0.0.0/8'], '192.0.2.1', true],
    ['refuses an address inside a lone blocklist', [], ['10.0.0.0/8'], '10.9.9.9', false],
    ['matches an IPv4-mapped client against an IPv4 allow rule', ['10.0.0.0/8'], [], '::ffff:10.0.0.5', true],
    ['matches an IPv4-mapped client against an IPv4 block rule', [], ['10.0.0.5'], '::ffff:10.0.0.5', false],
    ['matches an IPv4 client against an IPv4-mapped rule', ['::ffff:10.0.0.0/104'], [], '10.200.0.1', true],
    ['allows an address inside an IPv6 range', ['2001:db8::/32'], [], '2001:db8:ffff::1', true],
    ['refuses an address outside an IPv6 range', ['2001:db8::/32'], [], '2001:db9::1', false],
    ['never matches an IPv6 client against an IPv4 rule', ['0.0.0.0/0'], [], '2001:db8::1', false],
    ['never matches an IPv4 client against an IPv6 rule', ['::/0'], [], '10.0.0.1', false],
    ['refuses an unparseable client behind an allowlist', ['0.0.0.0/0'], [], 'unknown', false],
    ['refuses an unparseable client behind a blocklist', [], ['10.0.0.0/8'], 'unknown', false],
  ])('%s', (_label, allowed, blocked, clientIp, expected) => {
    expect(ipAllowed(compileIpFilter(allowed, blocked), clientIp)).toBe(expected);
  });
});
