/**
 * The outbound address guard: every request the gateway makes to a user-supplied URL (webhook
 * deliveries and their /test, image fetches and each of their redirect hops) goes through it twice.
 *   1. `checkOutboundUrl` when the URL is accepted: scheme, no credentials, and the host (an address
 *      literal, or every address its name resolves to) must be globally routable (core/net/address-policy).
 *   2. `guardedLookup` at connect time, as the `lookup` of the socket: the name is resolved again and the
 *      connection is refused if any address is not allowed, so a name that resolved to a public address
 *      at creation cannot be re-pointed at 127.0.0.1 afterwards (DNS rebinding). net.connect skips
 *      `lookup` for address literals: `assertLiteralAllowed` covers those before the request.
 * Both judge each address together with the URL's host, for the operator's `security.allowed_targets`.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Config } from '../config.js';
import { describeRange, parseAllowedTargets, parseIpLiteral, refusedRange, type AllowedTargets, type Refusal } from '../core/net/address-policy.js';

export interface OutboundPolicy {
  readonly allowPrivate: boolean;
  readonly allowHttp: boolean;
  readonly allowedTargets?: AllowedTargets;
}

/** The policy the config's `security` block sets, for every outbound fetch (webhooks, images). */
export function outboundPolicyOf(security: Config['security']): OutboundPolicy {
  return {
    allowPrivate: security.allow_private_targets,
    allowHttp: security.allow_http_targets,
    allowedTargets: parseAllowedTargets(security.allowed_targets),
  };
}

export type UrlCheck = { readonly ok: true; readonly url: URL } | { readonly ok: false; readonly reason: string };

/** Refused at connect time; the message says which host and why. */
export class OutboundAddressError extends Error {
  readonly code = 'EOUTBOUNDREFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundAddressError';
  }
}

export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

const RESOLVE_TIMEOUT_MS = 5000;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`resolving ${hostname} timed out`)), RESOLVE_TIMEOUT_MS);
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(addresses);
    });
  });

function refusal(host: string, address: string, range: Refusal): string {
  return host === address ? `${host} is ${describeRange(range)}` : `${host} resolves to ${address}, ${describeRange(range)}`;
}

export async function checkOutboundUrl(raw: string, policy: OutboundPolicy, resolve: Resolver = systemResolver): Promise<UrlCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) {
    return { ok: false, reason: policy.allowHttp ? 'must use https or http' : 'must use https' };
  }
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials' };
  // WHATWG URL parsing has already normalized 0x7f.1, 2130706433 and friends to dotted decimal.
  const host = url.hostname;
  if (parseIpLiteral(host)) {
    const range = refusedRange(host, policy, host);
    return range ? { ok: false, reason: `must not target a private or internal address: ${refusal(host, host, range)}` } : { ok: true, url };
  }
  let addresses: readonly LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return { ok: false, reason: `has a host that does not resolve (${host})` };
  }
  if (addresses.length === 0) return { ok: false, reason: `has a host that does not resolve (${host})` };
  for (const a of addresses) {
    const range = refusedRange(a.address, policy, host);
    if (range) return { ok: false, reason: `must not target a private or internal address: ${refusal(host, a.address, range)}` };
  }
  return { ok: true, url };
}

/** Throws when a URL's host is an address literal the policy refuses (connect-time `lookup` never sees those). */
export function assertLiteralAllowed(url: URL, policy: OutboundPolicy): void {
  if (!parseIpLiteral(url.hostname)) return;
  const range = refusedRange(url.hostname, policy, url.hostname);
  if (range) throw new OutboundAddressError(`refused: ${refusal(url.hostname, url.hostname, range)}`);
}

/** A `lookup` for net/tls.connect that refuses names resolving to addresses the policy forbids. */
export function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      for (const a of addresses) {
        const range = refusedRange(a.address, policy, hostname);
        if (range) {
          callback(new OutboundAddressError(`refused at connect: ${refusal(hostname, a.address, range)}`), '');
          return;
        }
      }
      const first = addresses[0];
      if (!first) callback(new OutboundAddressError(`${hostname} resolved to no address`), '');
      else if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}
