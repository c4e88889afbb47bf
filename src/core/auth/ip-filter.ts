/**
 * Key IP filters (SPEC Authentication 6): allowlist first, then the blocklist wins. Entries are single
 * addresses or CIDR ranges, IPv4 or IPv6; IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are compared as IPv4
 * so that a dual-stack listener cannot be used to slip past an IPv4 rule.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type IpRange = readonly [Address, number];

/**
 * ipaddr.js also reads legacy IPv4 forms ('010.0.0.1' as octal 8.0.0.1, '10.1' as 10.0.0.1): a rule an
 * operator wrote as 010.0.0.1 would silently mean another address, so only dotted-decimal is IPv4.
 */
function isStrictAddress(text: string): boolean {
  if (text.includes(':')) return ipaddr.IPv6.isValid(text);
  return ipaddr.IPv4.isValidFourPartDecimal(text) && !/(^|\.)0\d/.test(text);
}

export function parseAddress(text: string): Address | null {
  if (!isStrictAddress(text)) return null;
  const addr = ipaddr.parse(text);
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

export function parseRange(text: string): IpRange | null {
  if (text.includes('/')) {
    const [addrText = ''] = text.split('/');
    if (!isStrictAddress(addrText)) return null;
    try {
      const [addr, bits] = ipaddr.parseCIDR(text);
      if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
        return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
      }
      return [addr, bits];
    } catch {
      return null;
    }
  }
  const addr = parseAddress(text);
  return addr ? [addr, addr.kind() === 'ipv4' ? 32 : 128] : null;
}

export const ipOrCidrSchema = z.string().refine((s) => parseRange(s) !== null, 'must be an IPv4/IPv6 address or CIDR range');

function inAny(addr: Address, ranges: readonly IpRange[]): boolean {
  return ranges.some(([base, bits]) => base.kind() === addr.kind() && addr.match(base, bits));
}

export interface IpFilter {
  readonly allowed: readonly IpRange[];
  readonly blocked: readonly IpRange[];
  /** A stored entry that no longer parses: the filter fails closed rather than dropping the entry. */
  readonly corrupt: boolean;
}

export function compileIpFilter(allowed: readonly string[], blocked: readonly string[]): IpFilter | null {
  if (allowed.length === 0 && blocked.length === 0) return null;
  const parsedAllowed = allowed.map(parseRange);
  const parsedBlocked = blocked.map(parseRange);
  const valid = (r: IpRange | null): r is IpRange => r !== null;
  return {
    allowed: parsedAllowed.filter(valid),
    blocked: parsedBlocked.filter(valid),
    corrupt: !parsedAllowed.every(valid) || !parsedBlocked.every(valid),
  };
}

/** An address we cannot parse never passes a non-empty filter, and a corrupt filter passes nobody. */
export function ipAllowed(filter: IpFilter | null, clientIp: string): boolean {
  if (!filter) return true;
  if (filter.corrupt) return false;
  const addr = parseAddress(clientIp);
  if (!addr) return false;
  if (filter.allowed.length > 0 && !inAny(addr, filter.allowed)) return false;
  return !inAny(addr, filter.blocked);
}
