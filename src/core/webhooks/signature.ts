/**
 * The signed string of SPEC Events 2: `<timestamp>.<raw_body>`, where the timestamp is the
 * X-Webhook-Timestamp header (Unix seconds at signing). The HMAC key is the whole endpoint secret,
 * `whsec_` prefix included, as UTF-8. Shared by the signing worker and the receivers' verify function.
 */

export const SIGNATURE_PREFIX = 'sha256=';

export function signedPayload(timestamp: number | string, body: string): string {
  return `${timestamp}.${body}`;
}
