/**
 * Headers on every dashboard and /auth response (issue 22): a CSP that allows nothing from outside the
 * machine and no inline script or style (the QR code is inline SVG markup, which needs neither), no
 * framing, no referrer to other origins.
 *
 * `form-action` lists the identity providers' origins besides our own: connecting a provider is a POST
 * (CSRF-checked) answered by a redirect to the provider, and CSP checks form redirects too.
 */
import type { Reply } from '../../http/reply.js';

export function contentSecurityPolicy(formTargets: readonly string[]): string {
  const formAction = ["'self'", ...formTargets].join(' ');
  return [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self'",
    `form-action ${formAction}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/**
 * Each exactly once: the session guard sets them, and so does the page it wraps (account pages answer
 * through auth-kit's sendPage). Twice was `X-Frame-Options: DENY, DENY`, which browsers read as invalid
 * and so as absent (issue 31), and a CSP set twice can only narrow what the playground widened.
 */
export function setSecurityHeaders(reply: Reply, csp: string): void {
  reply.setHeaderOnce('Content-Security-Policy', csp);
  reply.setHeaderOnce('X-Frame-Options', 'DENY');
  reply.setHeaderOnce('Referrer-Policy', 'same-origin');
  reply.setHeaderOnce('X-Content-Type-Options', 'nosniff');
}
