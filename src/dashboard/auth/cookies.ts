/**
 * Cookies of the dashboard (SPEC Authentication 14): the session id, and the OIDC sign-in in flight.
 *
 * Served over HTTPS (server.production, server.tls, or an https dashboard.public_url) the session cookie
 * is `__Host-switchboard_session`: Secure, Path=/, no Domain, so no other host or path can set or shadow
 * it. Browsers refuse a `__Host-` cookie without Secure, and a Secure cookie is not sent over plain HTTP,
 * so a development gateway (`production: false`, no TLS) names it `switchboard_session` and drops Secure;
 * everything else (HttpOnly, SameSite=Lax, Path=/) is the same.
 */

export interface CookieNames {
  readonly session: string;
  readonly oidcFlow: string;
  readonly secure: boolean;
}

export function cookieNames(secure: boolean): CookieNames {
  return secure
    ? { session: '__Host-switchboard_session', oidcFlow: '__Host-switchboard_oidc', secure }
    : { session: 'switchboard_session', oidcFlow: 'switchboard_oidc', secure };
}

/** The value of one cookie from a Cookie header, or null. */
export function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * A Set-Cookie value. `maxAgeSeconds` null: a browser-session cookie (the server decides expiry); 0 clears.
 * Values are our base64url ids: nothing to escape.
 */
export function setCookie(name: string, value: string, secure: boolean, maxAgeSeconds: number | null): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (secure) parts.push('Secure');
  if (maxAgeSeconds !== null) parts.push(`Max-Age=${maxAgeSeconds}`);
  return parts.join('; ');
}
