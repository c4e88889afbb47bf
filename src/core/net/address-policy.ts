/**
 * Which addresses outbound requests (webhook deliveries, image fetches) may reach: only globally routable
 * unicast. The rule is an allow-list with carve-outs, not a list of known-bad ranges, so a form nobody
 * thought of is refused rather than admitted (issue 19: `::7f00:1`, `::a00:1` and the rest of ::/96
 * passed when only what ipaddr.js does not call `unicast` was refused).
 *   IPv4: everything except the IANA IPv4 special-purpose blocks below (RFC 6890 and its updates).
 *   IPv6: only 2000::/3 (RFC 4291 §2.4, the global unicast space IANA allocates from), minus the IANA IPv6
 *   special-purpose blocks inside it. Everything outside 2000::/3 is refused, which takes care of ::/96
 *   (IPv4-compatible), ::ffff:0:0/96 (IPv4-mapped), 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64), fc00::/7,
 *   fe80::/10 and ff00::/8 at once; those are still listed to name the refusal.
 * Forms that embed an IPv4 address are refused wholesale rather than judged by the address they carry:
 * 6to4 (2002::/16) is deprecated (RFC 7526) and reaches its IPv4 through whatever relay the network has,
 * Teredo (inside 2001::/23) likewise, and a mapped ::ffff:8.8.8.8 is spelt that way by nobody but an
 * attacker. The operator's `security.allow_private_targets` (local testing only) admits every address
 * except those that are never a single host: unspecified ("this network", which Linux connects to the
 * local host), broadcast and multicast, also when spelt as an IPv4-mapped IPv6 address.
 *
 * `security.allowed_targets` (webhook receivers and image hosts on an internal network) admits named
 * targets instead of everything: a host entry admits every address of that URL host, a CIDR entry (or an
 * address, a /32 or /128) every address inside it, whatever name led there. Both are refused the same
 * four "never a single host" ranges as the testing switch: listing 0.0.0.0/0 must not open 0.0.0.0.
 */
import ipaddr from 'ipaddr.js';

export interface AddressPolicy {
  readonly allowPrivate: boolean;
  /** Operator-listed targets admitted although not globally routable (parseAllowedTargets). */
  readonly allowedTargets?: AllowedTargets;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

export interface AllowedTargets {
  /** Lower-case host names, compared with the URL's host exactly. */
  readonly hosts: ReadonlySet<string>;
  readonly networks: readonly (readonly [network: Address, bits: number])[];
}

export const NO_ALLOWED_TARGETS: AllowedTargets = { hosts: new Set(), networks: [] };

/** Why an address is refused; `describeRange` words each one, so a new name without wording does not compile. */
export type RangeName =
  | 'unspecified'
  | 'thisNetwork'
  | 'private'
  | 'carrierGradeNat'
  | 'loopback'
  | 'linkLocal'
  | 'ietfProtocol'
  | 'documentation'
  | 'relay6to4'
  | 'benchmarking'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'ipv4Mapped'
  | 'ipv4Translated'
  | 'ipv4Compatible'
  | 'nat64'
  | 'discard'
  | 'uniqueLocal'
  | 'siteLocal'
  | 'teredo'
  | '6to4'
  | 'segmentRouting'
  | 'notGlobalUnicast';

export type Refusal = RangeName | 'not an IP address';

type Block<A> = readonly [network: A, bits: number, range: RangeName];

function blocks<A extends ipaddr.IPv4 | ipaddr.IPv6>(kind: { parseCIDR(cidr: string): [A, number] }, rows: readonly (readonly [string, RangeName])[]): readonly Block<A>[] {
  return rows.map(([cidr, range]) => {
    const [network, bits] = kind.parseCIDR(cidr);
    return [network, bits, range] as const;
  });
}

/** IANA IPv4 special-purpose registry (and multicast, class E). First match wins: specific before general. */
const V4_BLOCKS = blocks(ipaddr.IPv4, [
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'thisNetwork'], // RFC 791; connecting to 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0/8', 'private'], // RFC 1918
  ['100.64.0.0/10', 'carrierGradeNat'], // RFC 6598
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'linkLocal'], // RFC 3927; cloud metadata services live at 169.254.169.254
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'ietfProtocol'], // RFC 6890: DS-Lite, NAT64 discovery, PCP anycast...
  ['192.0.2.0/24', 'documentation'], // RFC 5737 TEST-NET-1
  ['192.88.99.0/24', 'relay6to4'], // RFC 7526: deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'], // RFC 2544
  ['198.51.100.0/24', 'documentation'], // TEST-NET-2
  ['203.0.113.0/24', 'documentation'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'], // RFC 1112 class E
]);

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * IANA IPv6 special-purpose registry. Rows outside 2000::/3 only name the refusal (the allow-list refuses
 * them anyway) and let the relaxed policy tell unspecified and multicast apart. 2001::/23 is refused whole
 * although a few of its sub-blocks are globally reachable (AMT 2001:3::/32, AS112 2001:4:112::/48, ORCHIDv2):
 * no webhook receiver or image host lives there. Teredo and benchmarking come first for their wording.
 */
const V6_BLOCKS = blocks(ipaddr.IPv6, [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'ipv4Mapped'], // RFC 4291 §2.5.5.2: sockets connect to the embedded IPv4 address
  ['::ffff:0:0:0/96', 'ipv4Translated'], // RFC 2765 (SIIT)
  ['::/96', 'ipv4Compatible'], // RFC 4291 §2.5.5.1, deprecated: ::7f00:1 is ::127.0.0.1
  ['64:ff9b::/96', 'nat64'], // RFC 6052: the well-known prefix reaches the embedded IPv4 through NAT64
  ['64:ff9b:1::/48', 'nat64'], // RFC 8215: local-use NAT64 prefixes
  ['100::/64', 'discard'], // RFC 6666
  ['fc00::/7', 'uniqueLocal'], // RFC 4193; fd00:ec2::254 is the EC2 metadata service
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'siteLocal'], // RFC 3879, deprecated but still routed inside some sites
  ['ff00::/8', 'multicast'],
  ['2001::/32', 'teredo'], // RFC 4380: embeds (obfuscated) IPv4 addresses
  ['2001:2::/48', 'benchmarking'], // RFC 5180
  ['2001::/23', 'ietfProtocol'], // RFC 2928
  ['2001:db8::/32', 'documentation'], // RFC 3849
  ['2002::/16', '6to4'], // RFC 3056: embeds an IPv4 address; refused whole (see the header)
  ['3fff::/20', 'documentation'], // RFC 9637
  ['5f00::/16', 'segmentRouting'], // RFC 9602: SRv6 SIDs, not globally reachable
]);

/** What the relaxed policy still refuses: none of these is a single host one could mean to reach. */
const NEVER: ReadonlySet<RangeName> = new Set(['unspecified', 'thisNetwork', 'broadcast', 'multicast']);

const DOTTED_TAIL = /^(.*:)([^:]*\.[^:]*)$/;

/**
 * IPv6 text with its dotted IPv4 tail rewritten as two hex groups, or null when the tail is not a.b.c.d.
 * ipaddr.js reads `::127.0.0.1` as ::ffff:127.0.0.1 (mapped), but RFC 4291 makes it ::7f00:1 (compatible),
 * and glibc's inet_ntop prints resolved ::/96 addresses in exactly that dotted form. The zone is dropped:
 * it does not change which block an address is in.
 */
function withHexTail(text: string): string | null {
  const [address = ''] = text.split('%');
  const tail = DOTTED_TAIL.exec(address);
  if (!tail) return address;
  const [, head = '', dotted = ''] = tail;
  if (!ipaddr.IPv4.isValidFourPartDecimal(dotted)) return null;
  const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(dotted).octets;
  return `${head}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** Parses an address literal (brackets allowed); null when it is not one. */
export function parseIpLiteral(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (bare.includes(':')) {
    const hex = withHexTail(bare);
    return hex !== null && ipaddr.IPv6.isValid(hex) ? ipaddr.IPv6.parse(hex) : null;
  }
  // Only a.b.c.d: legacy spellings (0x7f.1, 2130706433) reach here already normalized by the URL parser.
  return ipaddr.IPv4.isValidFourPartDecimal(bare) ? ipaddr.IPv4.parse(bare) : null;
}

function firstMatch<A extends ipaddr.IPv4 | ipaddr.IPv6>(addr: A, table: readonly Block<A>[]): RangeName | null {
  for (const [network, bits, range] of table) if (addr.match(network, bits)) return range;
  return null;
}

/** The special-purpose block an address falls in, or null when it is globally routable unicast. */
export function classifyAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): RangeName | null {
  if (addr instanceof ipaddr.IPv4) return firstMatch(addr, V4_BLOCKS);
  return firstMatch(addr, V6_BLOCKS) ?? (addr.match(GLOBAL_UNICAST_V6) ? null : 'notGlobalUnicast');
}

/**
 * Whether a peer address (as a socket reports it: `127.0.0.1`, `0000:...:0001`, an IPv4-mapped
 * `::ffff:127.0.0.1`) is this machine's loopback: the test hooks answer no one else.
 */
export function isLoopbackAddress(text: string): boolean {
  const addr = parseIpLiteral(text);
  if (!addr) return false;
  const carried = addr instanceof ipaddr.IPv6 && addr.isIPv4MappedAddress() ? addr.toIPv4Address() : addr;
  return classifyAddress(carried) === 'loopback';
}

/**
 * null when the address may be reached; otherwise why not, e.g. "loopback". `host`: the URL's host the
 * address was reached through (itself for an address literal), for the policy's host entries.
 */
export function refusedRange(address: string, policy: AddressPolicy, host?: string): Refusal | null {
  const addr = parseIpLiteral(address);
  if (!addr) return 'not an IP address';
  const range = classifyAddress(addr);
  if (range === null) return null;
  const admitted = policy.allowPrivate || (policy.allowedTargets !== undefined && isListed(addr, host, policy.allowedTargets));
  if (!admitted) return range;
  if (NEVER.has(range)) return range;
  // ::ffff:0.0.0.0 connects to the local host just as 0.0.0.0 does: judge what a mapped address carries.
  if (range === 'ipv4Mapped' && addr instanceof ipaddr.IPv6) {
    const carried = classifyAddress(addr.toIPv4Address());
    if (carried !== null && NEVER.has(carried)) return carried;
  }
  return null;
}

/**
 * A mapped ::ffff:a.b.c.d is matched as a.b.c.d, the address a socket reaches with it, so listing
 * 10.0.0.0/8 admits both spellings of 10.1.2.3 and nothing else.
 */
function isListed(addr: Address, host: string | undefined, targets: AllowedTargets): boolean {
  if (host !== undefined && targets.hosts.has(host.toLowerCase())) return true;
  const reached = addr instanceof ipaddr.IPv6 && addr.isIPv4MappedAddress() ? addr.toIPv4Address() : addr;
  return targets.networks.some(([network, bits]) => network.kind() === reached.kind() && reached.match(network, bits));
}

/** A host name as a URL spells it (what `new URL` leaves in hostname): letters, digits, dashes, dots. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/i;

/** Why an `allowed_targets` entry cannot be used, or null; parseAllowedTargets accepts what this accepts. */
export function allowedTargetProblem(entry: string): string | null {
  const target = parseTarget(entry);
  if (target === null) return 'must be a host name, an IP address or a CIDR range (10.0.0.0/8, hooks.internal, 192.168.1.5)';
  if (typeof target === 'string') return null;
  const [network, bits] = target;
  const never = neverBlockHolding(network, bits);
  return never ? `names only ${describeRange(never)}, which is never admitted` : null;
}

export function parseAllowedTargets(entries: readonly string[]): AllowedTargets {
  const hosts = new Set<string>();
  const networks: (readonly [Address, number])[] = [];
  for (const entry of entries) {
    const target = parseTarget(entry);
    if (target === null) throw new Error(`allowed target ${JSON.stringify(entry)}: ${allowedTargetProblem(entry) ?? 'invalid'}`);
    if (typeof target === 'string') hosts.add(target);
    else networks.push(target);
  }
  return { hosts, networks };
}

/** A host name (lower-cased), or an address as a network of its own full length, or a CIDR range. */
function parseTarget(entry: string): string | readonly [Address, number] | null {
  const text = entry.trim();
  if (text.includes('/')) {
    const [address = '', bits = ''] = text.split('/');
    const addr = parseIpLiteral(address);
    const length = Number(bits);
    if (!addr || !/^\d{1,3}$/.test(bits) || length > (addr.kind() === 'ipv4' ? 32 : 128)) return null;
    return [addr, length];
  }
  const addr = parseIpLiteral(text);
  if (addr) return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  // Digits and dots only would be a legacy address spelling (10.1, 0x0a.1) that URLs rewrite: not a name.
  return HOST_NAME.test(text) && !/^[\d.]+$/.test(text) ? text.toLowerCase() : null;
}

/** The "never" block a whole range lies in (so listing it could admit nothing), or null. */
function neverBlockHolding(network: Address, bits: number): RangeName | null {
  const table: readonly Block<Address>[] = network instanceof ipaddr.IPv4 ? V4_BLOCKS : V6_BLOCKS;
  for (const [block, blockBits, range] of table) {
    if (NEVER.has(range) && bits >= blockBits && network.kind() === block.kind() && network.match(block, blockBits)) return range;
  }
  return null;
}

const WORDS: Record<Refusal, string> = {
  unspecified: 'the unspecified address',
  thisNetwork: 'a "this network" address (0.0.0.0/8)',
  private: 'a private address',
  carrierGradeNat: 'a carrier-grade NAT address',
  loopback: 'a loopback address',
  linkLocal: 'a link-local address',
  ietfProtocol: 'an IETF protocol assignment, not a public address',
  documentation: 'a documentation address',
  relay6to4: 'a 6to4 relay anycast address',
  benchmarking: 'a benchmarking address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address',
  ipv4Translated: 'an IPv4-translated IPv6 address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
  nat64: 'a NAT64 address (it embeds an IPv4 address)',
  discard: 'a discard-only address',
  uniqueLocal: 'a unique-local address',
  siteLocal: 'a site-local address',
  teredo: 'a Teredo address (it embeds an IPv4 address)',
  '6to4': 'a 6to4 address (it embeds an IPv4 address)',
  segmentRouting: 'a segment-routing address',
  notGlobalUnicast: 'outside the global unicast space (2000::/3)',
  'not an IP address': 'not an IP address',
};

/** Human wording of a refusal, completing "<host> is ...", for error messages. */
export function describeRange(range: Refusal): string {
  return WORDS[range];
}

/** Cloud instance-metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS over IPv6). */
const METADATA: readonly Address[] = [ipaddr.parse('169.254.169.254'), ipaddr.parse('fd00:ec2::254')];
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/**
 * What an operator should hear about `security.allowed_targets` (issue 31), one sentence per entry that
 * admits everything (a /0) or the cloud metadata service, where a webhook URL or an image URL could read
 * the instance's credentials. Valid configuration all the same: said at start and by `config check`.
 */
export function allowedTargetsWarnings(entries: readonly string[]): string[] {
  const warnings: string[] = [];
  entries.forEach((entry, i) => {
    const target = parseTarget(entry);
    const at = `security.allowed_targets[${i}] ${JSON.stringify(entry)}`;
    if (target === null) return;
    if (typeof target === 'string') {
      if (METADATA_HOSTS.has(target)) warnings.push(`${at} names a cloud metadata service: webhook and image URLs could read this machine's cloud credentials`);
      return;
    }
    const [network, bits] = target;
    if (bits === 0) warnings.push(`${at} admits every ${network.kind() === 'ipv4' ? 'IPv4' : 'IPv6'} address, private and cloud metadata ones included: list the internal ranges you need instead`);
    else {
      const metadata = METADATA.find((m) => m.kind() === network.kind() && m.match(network, bits));
      if (metadata) warnings.push(`${at} admits the cloud metadata address ${metadata.toString()}: webhook and image URLs could read this machine's cloud credentials`);
    }
  });
  return warnings;
}
