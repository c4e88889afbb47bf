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

export function setSecurityHeaders(reply: Reply, csp: string): void {
  reply.setHeader('Content-Security-Policy', csp);
  reply.setHeader('X-Frame-Options', 'DENY');
  reply.setHeader('Referrer-Policy', 'same-origin');
  reply.setHeader('X-Content-Type-Options', 'nosniff');
}
