import { describe, expect, it } from 'vitest';
import { refusedRange } from '../../../../src/core/net/address-policy.js';

const strict = { allowPrivate: false };
const relaxed = { allowPrivate: true };

describe('refusedRange', () => {
  it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '[2001:4860:4860::8888]'])('lets the public address %s through', (addr) => {
    expect(refusedRange(addr, strict)).toBeNull();
  });

  it.each([
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['0.0.0.0', 'unspecified'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'ipv4Mapped'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
  ])('refuses %s as %s', (addr, range) => {
    expect(refusedRange(addr, strict)).toBe(range);
  });

  it('admits private and loopback addresses when the operator allows private targets', () => {
    expect(refusedRange('127.0.0.1', relaxed)).toBeNull();
    expect(refusedRange('10.0.0.1', relaxed)).toBeNull();
    expect(refusedRange('::1', relaxed)).toBeNull();
  });

  it('never admits multicast, broadcast or unspecified, even when private targets are allowed', () => {
    expect(refusedRange('224.0.0.1', relaxed)).toBe('multicast');
    expect(refusedRange('255.255.255.255', relaxed)).toBe('broadcast');
    expect(refusedRange('0.0.0.0', relaxed)).toBe('unspecified');
  });

  it('refuses what is not an address literal, including legacy IPv4 spellings', () => {
    expect(refusedRange('example.com', strict)).toBe('not an IP address');
    expect(refusedRange('0x7f.1', strict)).toBe('not an IP address');
  });
});
