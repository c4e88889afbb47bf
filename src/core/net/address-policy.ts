/**
 * Which addresses outbound requests (webhook deliveries, later image fetches) may reach. Only global
 * unicast: private (RFC 1918), loopback, link-local, CGNAT (100.64/10), unique-local, multicast,
 * broadcast, unspecified, IPv4-mapped IPv6 (::ffff:a.b.c.d reaches an IPv4 host the v4 rules refuse),
 * NAT64 / 6to4 / Teredo (embed an IPv4 address) and the reserved and documentation ranges are refused.
 * The operator's `security.allow_private_targets` (local testing only) admits every address except
 * multicast, broadcast and unspecified, which are never a single host.
 */
import ipaddr from 'ipaddr.js';

export interface AddressPolicy {
  readonly allowPrivate: boolean;
}

const NEVER = new Set(['multicast', 'broadcast', 'unspecified']);

/** Parses an address literal (brackets allowed); null when it is not one. */
export function parseIpLiteral(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (bare.includes(':')) return ipaddr.IPv6.isValid(bare) ? ipaddr.IPv6.parse(bare) : null;
  return ipaddr.IPv4.isValidFourPartDecimal(bare) ? ipaddr.IPv4.parse(bare) : null;
}

/** null when the address may be reached; otherwise why not, e.g. "loopback". */
export function refusedRange(address: string, policy: AddressPolicy): string | null {
  const addr = parseIpLiteral(address);
  if (!addr) return 'not an IP address';
  const range = addr.range();
  if (NEVER.has(range)) return range;
  if (policy.allowPrivate) return null;
  return range === 'unicast' ? null : range;
}

/** Human wording of an ipaddr.js range name, for error messages. */
export function describeRange(range: string): string {
  const words: Record<string, string> = {
    private: 'a private address',
    loopback: 'a loopback address',
    linkLocal: 'a link-local address',
    carrierGradeNat: 'a carrier-grade NAT address',
    uniqueLocal: 'a unique-local address',
    multicast: 'a multicast address',
    broadcast: 'the broadcast address',
    unspecified: 'the unspecified address',
    ipv4Mapped: 'an IPv4-mapped IPv6 address',
  };
  return words[range] ?? `a non-public address (${range})`;
}
