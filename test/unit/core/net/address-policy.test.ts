import { describe, expect, it } from 'vitest';
import { describeRange, refusedRange } from '../../../../src/core/net/address-policy.js';

const strict = { allowPrivate: false };
const relaxed = { allowPrivate: true };

describe('refusedRange', () => {
  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '1.1.1.1',
    '223.255.255.254',
    // The edges just outside the special-purpose blocks stay public.
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.1',
    '192.0.3.1',
    '192.88.98.1',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '198.51.99.1',
    '203.0.112.1',
    '2606:4700:4700::1111',
    '[2001:4860:4860::8888]',
    '2a00:1450:4001:81a::200e',
    '2001:200::1', // first address past 2001::/23
    '2001:db9::1', // past the documentation /32
    '2003::1', // past 6to4
    '3fff:1000::1', // past 3fff::/20
  ])('lets the public address %s through', (addr) => {
    expect(refusedRange(addr, strict)).toBeNull();
  });

  it.each([
    // IPv4 special-purpose blocks
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'thisNetwork'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'linkLocal'],
    ['192.0.0.170', 'ietfProtocol'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['192.88.99.1', 'relay6to4'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // IPv6 outside 2000::/3
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'ipv4Mapped'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['::ffff:a9fe:a9fe', 'ipv4Mapped'],
    ['0:0:0:0:0:ffff:169.254.169.254', 'ipv4Mapped'],
    ['::ffff:0:7f00:1', 'ipv4Translated'],
    // Issue 19: ipaddr.js calls these `unicast`; they are IPv4-compatible spellings of 127.0.0.1 and 10.0.0.1.
    ['::127.0.0.1', 'ipv4Compatible'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::a00:1', 'ipv4Compatible'],
    ['[::a9fe:a9fe]', 'ipv4Compatible'],
    ['::8.8.8.8', 'ipv4Compatible'],
    ['::2', 'ipv4Compatible'],
    ['64:ff9b::7f00:1', 'nat64'],
    ['64:ff9b::169.254.169.254', 'nat64'],
    ['64:ff9b::8.8.8.8', 'nat64'],
    ['64:ff9b:1::a00:1', 'nat64'],
    ['100::1', 'discard'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['fec0::1', 'siteLocal'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['1::1', 'notGlobalUnicast'],
    ['4000::1', 'notGlobalUnicast'],
    ['e000::1', 'notGlobalUnicast'],
    ['::ffff:1:0:0:1', 'notGlobalUnicast'],
    // IPv6 special-purpose blocks inside 2000::/3
    ['2001::1', 'teredo'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:2::1', 'benchmarking'],
    ['2001:3::1', 'ietfProtocol'],
    ['2001:4:112::1', 'ietfProtocol'],
    ['2001:20::1', 'ietfProtocol'],
    ['2001:1ff::1', 'ietfProtocol'],
    ['2001:db8::1', 'documentation'],
    ['2001:db8:ffff::1', 'documentation'],
    ['2002:7f00:1::', '6to4'],
    ['2002:808:808::1', '6to4'],
    ['3fff::1', 'documentation'],
    ['3fff:fff::1', 'documentation'],
    ['5f00::1', 'segmentRouting'],
    ['5f01::1', 'notGlobalUnicast'],
  ])('refuses %s as %s', (addr, range) => {
    expect(refusedRange(addr, strict)).toBe(range);
  });

  it.each(['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::7f00:1', '2001:db8::1', '240.0.0.1'])(
    'admits %s when the operator allows private targets',
    (addr) => {
      expect(refusedRange(addr, relaxed)).toBeNull();
    },
  );

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'thisNetwork'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['ff02::1', 'multicast'],
    // Mapped addresses connect to the IPv4 they carry: ::ffff:0.0.0.0 reaches the local host as 0.0.0.0 does.
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:0.0.0.1', 'thisNetwork'],
    ['::ffff:224.0.0.1', 'multicast'],
    ['::ffff:255.255.255.255', 'broadcast'],
  ])('never admits %s (%s), even when private targets are allowed', (addr, range) => {
    expect(refusedRange(addr, relaxed)).toBe(range);
  });

  it('refuses what is not an address literal, including legacy IPv4 spellings', () => {
    expect(refusedRange('example.com', strict)).toBe('not an IP address');
    expect(refusedRange('0x7f.1', strict)).toBe('not an IP address');
    expect(refusedRange('2130706433', strict)).toBe('not an IP address');
    expect(refusedRange('127.1', strict)).toBe('not an IP address');
    expect(refusedRange('[::1', strict)).toBe('not an IP address');
    expect(refusedRange('::0x7f.0.0.1', strict)).toBe('not an IP address');
    expect(refusedRange('::127.1', strict)).toBe('not an IP address');
  });
});

describe('describeRange', () => {
  it.each([
    ['loopback', 'a loopback address'],
    ['ipv4Compatible', 'an IPv4-compatible IPv6 address'],
    ['nat64', 'a NAT64 address (it embeds an IPv4 address)'],
    ['notGlobalUnicast', 'outside the global unicast space (2000::/3)'],
  ] as const)('words %s as "%s"', (range, words) => {
    expect(describeRange(range)).toBe(words);
  });
});
