import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { checkOutboundUrl, guardedLookup, OutboundAddressError, type Resolver } from '../../../src/upstream/outbound-guard.js';

const strict = { allowPrivate: false, allowHttp: false };
const resolvesTo = (...addresses: string[]): Resolver => () =>
  Promise.resolve(addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })));
const unresolvable: Resolver = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));

describe('checkOutboundUrl', () => {
  it('accepts an https URL whose host resolves only to public addresses', async () => {
    expect(await checkOutboundUrl('https://hooks.example.com/in', strict, resolvesTo('93.184.216.34', '2606:2800:220:1::1'))).toMatchObject({ ok: true });
  });

  it.each([
    ['http://93.184.216.34/', 'must use https'],
    ['ftp://93.184.216.34/', 'must use https'],
    ['https://user:pass@93.184.216.34/', 'must not carry credentials'],
    ['not a url', 'must be an absolute URL'],
    ['https://127.0.0.1/', 'must not target a private or internal address: 127.0.0.1 is a loopback address'],
    ['https://0x7f.1/', 'must not target a private or internal address: 127.0.0.1 is a loopback address'],
    ['https://2130706433/', 'must not target a private or internal address: 127.0.0.1 is a loopback address'],
    ['https://[::ffff:7f00:1]/', 'must not target a private or internal address: [::ffff:7f00:1] is an IPv4-mapped IPv6 address'],
    ['https://169.254.169.254/latest/meta-data', 'must not target a private or internal address: 169.254.169.254 is a link-local address'],
  ])('refuses %s (%s)', async (url, reason) => {
    expect(await checkOutboundUrl(url, strict, resolvesTo('93.184.216.34'))).toEqual({ ok: false, reason });
  });

  it('refuses a name that resolves to a private address, naming the address', async () => {
    expect(await checkOutboundUrl('https://intranet.example.com/', strict, resolvesTo('10.0.0.7'))).toEqual({
      ok: false,
      reason: 'must not target a private or internal address: intranet.example.com resolves to 10.0.0.7, a private address',
    });
  });

  it('refuses a name when any one of its addresses is private', async () => {
    const check = await checkOutboundUrl('https://mixed.example.com/', strict, resolvesTo('93.184.216.34', '127.0.0.1'));
    expect(check.ok).toBe(false);
  });

  it('refuses a name that does not resolve', async () => {
    expect(await checkOutboundUrl('https://nowhere.invalid/', strict, unresolvable)).toEqual({ ok: false, reason: 'has a host that does not resolve (nowhere.invalid)' });
  });

  it('refuses localhost through the system resolver', async () => {
    const check = await checkOutboundUrl('https://localhost:8443/', strict);
    expect(check).toMatchObject({ ok: false });
    expect(check.ok === false && check.reason).toMatch(/^must not target a private or internal address: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
  });

  it('admits http and private targets only when the operator relaxed both', async () => {
    expect(await checkOutboundUrl('http://127.0.0.1:9000/', { allowPrivate: true, allowHttp: true })).toMatchObject({ ok: true });
    expect(await checkOutboundUrl('http://127.0.0.1:9000/', { allowPrivate: true, allowHttp: false })).toMatchObject({ ok: false });
    expect(await checkOutboundUrl('https://127.0.0.1:9000/', { allowPrivate: false, allowHttp: true })).toMatchObject({ ok: false });
  });
});

describe('guardedLookup (connect time)', () => {
  const lookup = (host: string, all: boolean) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      guardedLookup(strict)(host, { all }, (err, address) => resolve({ err, address })),
    );

  it('refuses a name that resolves to loopback when the socket connects (no DNS rebinding)', async () => {
    const { err } = await lookup('localhost', false);
    expect(err).toBeInstanceOf(OutboundAddressError);
    expect(err?.message).toMatch(/^refused at connect: localhost resolves to/);
  });

  it('answers in the shape net.connect asked for when the address is allowed', async () => {
    const relaxed = guardedLookup({ allowPrivate: true, allowHttp: true });
    const one = await new Promise<unknown[]>((resolve) => relaxed('localhost', { all: false }, (...args) => resolve(args)));
    expect(one[0]).toBeNull();
    expect(typeof one[1]).toBe('string');
    const all = await new Promise<unknown[]>((resolve) => relaxed('localhost', { all: true }, (...args) => resolve(args)));
    expect(Array.isArray(all[1])).toBe(true);
  });
});
