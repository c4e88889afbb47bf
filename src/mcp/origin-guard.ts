/**
 * DNS-rebinding protection for the MCP server (MCP "Streamable HTTP", Security Warning: servers MUST
 * validate Origin; local servers SHOULD bind to localhost). A page on evil.example.com whose name is made to
 * resolve to 127.0.0.1 reaches a local gateway with `Host: evil.example.com` and `Origin:
 * http://evil.example.com`; both are checked here, before the key (docs/mcp.md "Origin and Host").
 * The SDK's own allowedHosts/allowedOrigins options are deprecated in favour of a check in front of it.
 */

export interface OriginPolicy {
  /** config `exec.mcp_allowed_hosts`: host names (no port). Empty: see `listensOnLoopback`. */
  readonly allowedHosts: readonly string[];
  /** config `exec.mcp_allowed_origins`: exact origins (`scheme://host[:port]`). */
  readonly allowedOrigins: readonly string[];
  /** The gateway listens on a loopback address: with no allowedHosts, only loopback names are accepted. */
  readonly listensOnLoopback: boolean;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127(\.\d{1,3}){3}$/.test(h) || h.endsWith('.localhost');
}

/** `example.com:8080` -> `example.com`; `[::1]:8080` -> `[::1]`. */
export function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

function hostAllowed(hostname: string, policy: OriginPolicy): boolean {
  if (policy.allowedHosts.length > 0) return policy.allowedHosts.some((h) => h.toLowerCase() === hostname);
  return policy.listensOnLoopback ? isLoopbackHost(hostname) : true;
}

/** Why the request is refused, or null. `host` and `origin` are the request's headers. */
export function originRefusal(host: string | undefined, origin: string | undefined, policy: OriginPolicy): string | null {
  if (host !== undefined && !hostAllowed(hostnameOf(host), policy)) return `Host ${JSON.stringify(host)} is not a name this MCP server answers to.`;
  // Clients that are not browsers send no Origin: nothing to check.
  if (origin === undefined) return null;
  if (policy.allowedOrigins.includes(origin)) return null;
  let hostname: string;
  try {
    hostname = new URL(origin).hostname.toLowerCase();
  } catch {
    return `Origin ${JSON.stringify(origin)} is not an origin.`;
  }
  if (hostname.includes(':')) hostname = `[${hostname.replace(/^\[|\]$/g, '')}]`;
  // A browser origin is trusted only when named: by mcp_allowed_hosts, or as loopback on a loopback-bound
  // gateway. "Any host" (a public gateway without a list) never extends to browser origins.
  const named = policy.allowedHosts.length > 0 ? hostAllowed(hostname, policy) : policy.listensOnLoopback && isLoopbackHost(hostname);
  return named ? null : `Origin ${JSON.stringify(origin)} may not call this MCP server (exec.mcp_allowed_origins).`;
}
