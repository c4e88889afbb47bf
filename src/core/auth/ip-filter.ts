/**
 * Key IP filters (SPEC Authentication 6): allowlist first, then the blocklist wins. Entries are single
 * addresses or CIDR ranges, IPv4 or IPv6; IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are compared as IPv4
 * so that a dual-stack listener cannot be used to slip past an IPv4 rule.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type IpRange = readonly [Address, number];

export function parseAddress(text: string): Address | null {
  if (!ipaddr.isValid(text)) return null;
  const addr = ipaddr.parse(text);
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

export function parseRange(text: string): IpRange | null {
  if (text.includes('/')) {
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
}

export function compileIpFilter(allowed: readonly string[], blocked: readonly string[]): IpFilter | null {
  if (allowed.length === 0 && blocked.length === 0) return null;
  const compile = (list: readonly string[]): IpRange[] => list.map(parseRange).filter((r): r is IpRange => r !== null);
  return { allowed: compile(allowed), blocked: compile(blocked) };
}

/** An address we cannot parse never passes a non-empty filter. */
export function ipAllowed(filter: IpFilter | null, clientIp: string): boolean {
  if (!filter) return true;
  const addr = parseAddress(clientIp);
  if (!addr) return false;
  if (filter.allowed.length > 0 && !inAny(addr, filter.allowed)) return false;
  return !inAny(addr, filter.blocked);
}
