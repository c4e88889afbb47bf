/**
 * For webhook receivers (`import { verifyWebhook } from 'switchboard/webhooks'`): checks a delivery's
 * X-Webhook-Signature against the endpoint secret, in constant time, and refuses timestamps more than
 * 300 s from now (SPEC Events 2 and Limits). Pass the raw body bytes exactly as received: a body parsed
 * and re-serialized will not verify. No dependency beyond node:crypto.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type VerifyFailure = 'missing_headers' | 'malformed_timestamp' | 'timestamp_out_of_tolerance' | 'malformed_signature' | 'signature_mismatch';

export type VerifyResult =
  | { readonly ok: true; readonly timestamp: number }
  | { readonly ok: false; readonly reason: VerifyFailure; readonly message: string };

export interface VerifyOptions {
  /** Largest distance between X-Webhook-Timestamp and now, in seconds (default 300). */
  readonly toleranceSeconds?: number;
  /** Now, in Unix seconds (default: the system clock). */
  readonly now?: number;
}

/** Node's `req.headers` (lowercase keys), a fetch `Headers`, or a plain object. */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export const DEFAULT_TOLERANCE_SECONDS = 300;

/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, as the gateway signs. */
export function computeSignature(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? record[Object.keys(record).find((k) => k.toLowerCase() === name) ?? ''];
  return Array.isArray(value) ? value[0] : value;
}

const fail = (reason: VerifyFailure, message: string): VerifyResult => ({ ok: false, reason, message });

export function verifyWebhook(secret: string, rawBody: string | Uint8Array, headers: HeaderSource, options: VerifyOptions = {}): VerifyResult {
  const timestampText = header(headers, 'x-webhook-timestamp');
  const signature = header(headers, 'x-webhook-signature');
  if (timestampText === undefined || signature === undefined) return fail('missing_headers', 'X-Webhook-Timestamp and X-Webhook-Signature are required');
  if (!/^\d{1,12}$/.test(timestampText)) return fail('malformed_timestamp', 'X-Webhook-Timestamp must be Unix seconds');
  const timestamp = Number(timestampText);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - timestamp) > tolerance) return fail('timestamp_out_of_tolerance', `the timestamp is more than ${tolerance} s from now`);
  const match = /^sha256=([0-9a-f]{64})$/.exec(signature.trim());
  if (!match?.[1]) return fail('malformed_signature', 'X-Webhook-Signature must be sha256=<64 hex digits>');
  const expected = Buffer.from(computeSignature(secret, timestampText, rawBody).slice('sha256='.length), 'hex');
  const given = Buffer.from(match[1], 'hex');
  if (!timingSafeEqual(expected, given)) return fail('signature_mismatch', 'the signature does not match the body and secret');
  return { ok: true, timestamp };
}
