import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { allowedTargetProblem, allowedTargetsWarnings, parseAllowedTargets, refusedRange } from '../../../../src/core/net/address-policy.js';
import { parseConfig } from '../../../../src/config.js';
import { checkOutboundUrl, guardedLookup, OutboundAddressError, outboundPolicyOf, type Resolver } from '../../../../src/upstream/outbound-guard.js';

const listed = (...entries: string[]) => ({ allowPrivate: false, allowedTargets: parseAllowedTargets(entries) });
const policy = listed('10.0.0.0/8', 'hooks.internal', '192.168.1.5', 'fd00:1::/32');

describe('refusedRange with security.allowed_targets', () => {
  it.each([
    ['10.1.2.3', undefined],
    ['10.255.255.255', 'hooks.example.com'],
    ['192.168.1.5', undefined],
    ['fd00:1::7', undefined],
    // A mapped IPv4 address reaches the IPv4 it carries, which is listed.
    ['::ffff:10.1.2.3', undefined],
  ])('admits %s, inside a listed address or range (host %s)', (address, host) => {
    expect(refusedRange(address, policy, host)).toBeNull();
  });

  it('admits any private address of a listed host name, whatever case the URL used', () => {
    expect(refusedRange('172.20.0.9', policy, 'hooks.internal')).toBeNull();
    expect(refusedRange('127.0.0.1', policy, 'HOOKS.Internal')).toBeNull();
  });

  it.each([
    ['192.168.1.6', undefined, 'private'],
    ['172.16.0.1', 'other.internal', 'private'],
    ['127.0.0.1', 'localhost', 'loopback'],
    ['169.254.169.254', undefined, 'linkLocal'],
    ['fd00:2::1', undefined, 'uniqueLocal'],
    // Host entries match the whole host, not a suffix or a prefix.
    ['172.16.0.1', 'x.hooks.internal', 'private'],
    ['172.16.0.1', 'hooks.internal.evil.com', 'private'],
  ])('refuses %s reached through %s: not listed', (address, host, range) => {
    expect(refusedRange(address, policy, host)).toBe(range);
  });

  it('still refuses what is never a single host, even inside a listed range or behind a listed name', () => {
    const wide = listed('0.0.0.0/0', '::/0', 'everything.internal');
    expect(refusedRange('10.1.2.3', wide)).toBeNull();
    expect(refusedRange('0.0.0.0', wide)).toBe('unspecified');
    expect(refusedRange('0.1.2.3', wide)).toBe('thisNetwork');
    expect(refusedRange('255.255.255.255', wide)).toBe('broadcast');
    expect(refusedRange('224.0.0.1', wide)).toBe('multicast');
    expect(refusedRange('::', wide)).toBe('unspecified');
    expect(refusedRange('ff02::1', wide)).toBe('multicast');
    expect(refusedRange('::ffff:0.0.0.0', wide)).toBe('unspecified');
    expect(refusedRange('0.0.0.0', wide, 'everything.internal')).toBe('unspecified');
  });

  it('leaves public addresses admitted and changes nothing without entries', () => {
    expect(refusedRange('93.184.216.34', policy)).toBeNull();
    expect(refusedRange('10.1.2.3', listed(), 'hooks.internal')).toBe('private');
  });
});

describe('allowedTargetProblem (the config check)', () => {
  it.each(['10.0.0.0/8', 'hooks.internal', 'HOOKS.internal', '192.168.1.5', 'fd00::/8', '[fd00::1]', 'receiver_1.corp', 'localhost', '0.0.0.0/0'])(
    'accepts %s',
    (entry) => {
      expect(allowedTargetProblem(entry)).toBeNull();
    },
  );

  it.each([
    ['https://hooks.internal', 'must be a host name'],
    ['hooks.internal:8443', 'must be a host name'],
    ['10.0.0.0/33', 'must be a host name'],
    ['10.0.0.0/', 'must be a host name'],
    ['10.1', 'must be a host name'],
    ['', 'must be a host name'],
    ['224.0.0.0/4', 'names only a multicast address, which is never admitted'],
    ['255.255.255.255', 'names only the broadcast address'],
    ['0.0.0.0', 'names only the unspecified address'],
    ['ff02::/16', 'names only a multicast address'],
  ])('refuses %s', (entry, problem) => {
    expect(allowedTargetProblem(entry)).toContain(problem);
  });

  it('names the entry in the config file error', () => {
    expect(() => parseConfig({ security: { allowed_targets: ['10.0.0.0/8', 'http://x'] } })).toThrow(/security\.allowed_targets\[1\]: must be a host name/);
    expect(parseConfig({}).security.allowed_targets).toEqual([]);
  });
});

const resolvesTo = (...addresses: string[]): Resolver => () =>
  Promise.resolve(addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })));

describe('the outbound guard with allowed targets', () => {
  const config = parseConfig({ security: { allowed_targets: ['hooks.internal', '10.0.0.0/8', 'localhost'] } });
  const guard = outboundPolicyOf(config.security);

  it('accepts a listed name whatever it resolves to, and a name resolving into a listed range', async () => {
    expect(await checkOutboundUrl('https://hooks.internal/in', guard, resolvesTo('192.168.7.7'))).toMatchObject({ ok: true });
    expect(await checkOutboundUrl('https://git.corp.example/in', guard, resolvesTo('10.4.4.4'))).toMatchObject({ ok: true });
    expect(await checkOutboundUrl('https://10.9.8.7:8443/in', guard)).toMatchObject({ ok: true });
  });

  it('refuses an unlisted private target, and still requires https', async () => {
    expect(await checkOutboundUrl('https://intranet.corp/', guard, resolvesTo('192.168.7.7'))).toEqual({
      ok: false,
      reason: 'must not target a private or internal address: intranet.corp resolves to 192.168.7.7, a private address',
    });
    expect(await checkOutboundUrl('https://192.168.1.5/', guard)).toMatchObject({ ok: false });
    expect(await checkOutboundUrl('http://hooks.internal/', guard, resolvesTo('10.0.0.1'))).toEqual({ ok: false, reason: 'must use https' });
  });

  it('admits a listed name at connect time and refuses an unlisted one', async () => {
    const lookup = (policy: typeof guard, host: string) =>
      new Promise<NodeJS.ErrnoException | null>((resolve) => guardedLookup(policy)(host, { all: true }, (err) => resolve(err)));
    expect(await lookup(guard, 'localhost')).toBeNull();
    const without = outboundPolicyOf(parseConfig({ security: { allowed_targets: ['hooks.internal'] } }).security);
    expect(await lookup(without, 'localhost')).toBeInstanceOf(OutboundAddressError);
  });
});

describe('allowedTargetsWarnings (issue 31: 0.0.0.0/0 and the metadata address were accepted without a word)', () => {
  it('names each entry that admits every address or the cloud metadata service', () => {
    const warnings = allowedTargetsWarnings(['10.0.0.0/8', '0.0.0.0/0', '::/0', '169.254.0.0/16', '169.254.169.254', 'fd00:ec2::/32', 'metadata.google.internal', 'hooks.internal']);
    expect(warnings).toEqual([
      expect.stringMatching(/^security\.allowed_targets\[1\] "0\.0\.0\.0\/0" admits every IPv4 address/),
      expect.stringMatching(/^security\.allowed_targets\[2\] "::\/0" admits every IPv6 address/),
      expect.stringMatching(/^security\.allowed_targets\[3\] "169\.254\.0\.0\/16" admits the cloud metadata address 169\.254\.169\.254/),
      expect.stringMatching(/^security\.allowed_targets\[4\] "169\.254\.169\.254" admits the cloud metadata address/),
      expect.stringMatching(/^security\.allowed_targets\[5\] "fd00:ec2::\/32" admits the cloud metadata address fd00:ec2::254/),
      expect.stringMatching(/^security\.allowed_targets\[6\] "metadata\.google\.internal" names a cloud metadata service/),
    ]);
  });

  it('says nothing of ordinary internal ranges and hosts', () => {
    expect(allowedTargetsWarnings(['10.0.0.0/8', '192.168.1.5', 'fd00:1::/32', 'hooks.internal', '169.254.1.0/24'])).toEqual([]);
  });
});
