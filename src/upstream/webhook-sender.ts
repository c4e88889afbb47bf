/**
 * One webhook attempt over HTTP(S): a dedicated undici Agent (never the inference pools), the outbound
 * guard as the socket's `lookup` (no DNS rebinding) and for address literals, no redirect following (a
 * 3xx is a non-2xx, hence a failure), a per-attempt deadline covering connect, headers and body, and a
 * capped body read: the first 1 KiB is kept (SPEC "Webhook delivery record"), reading stops at 64 KiB.
 */
import { StringDecoder } from 'node:string_decoder';
import { Agent } from 'undici';
import type { AttemptOutcome, WebhookAttempt } from '../core/webhooks/delivery.js';
import { assertLiteralAllowed, guardedLookup, OutboundAddressError, type OutboundPolicy } from './outbound-guard.js';

export interface WebhookSender {
  send(attempt: WebhookAttempt): Promise<AttemptOutcome>;
  close(): Promise<void>;
}

export interface WebhookSenderOptions {
  readonly policy: OutboundPolicy;
  readonly timeoutMs: number;
  readonly connectionsPerOrigin: number;
  /** upstream/user-agent.ts: product token, version, link and contact. */
  readonly userAgent: string;
}

const KEEP_BYTES = 1024;
const READ_CAP_BYTES = 64 * 1024;

export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const agent = new Agent({
    connections: options.connectionsPerOrigin,
    keepAliveTimeout: 10_000,
    connect: { lookup: guardedLookup(options.policy), timeout: Math.min(options.timeoutMs, 10_000) },
  });

  async function send(attempt: WebhookAttempt): Promise<AttemptOutcome> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), options.timeoutMs);
    try {
      const url = new URL(attempt.url);
      assertLiteralAllowed(url, options.policy);
      const res = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': options.userAgent,
          'x-webhook-id': attempt.deliveryId,
          'x-webhook-timestamp': String(attempt.timestamp),
          'x-webhook-signature': attempt.signature,
        },
        body: attempt.body,
        signal: controller.signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      const responseBody = await readCapped(res.body);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { ok, httpStatus: res.statusCode, responseBody, errorMessage: ok ? null : `the receiver answered HTTP ${res.statusCode}` };
    } catch (err) {
      const message = controller.signal.aborted ? `timed out after ${options.timeoutMs} ms` : describeFailure(err);
      return { ok: false, httpStatus: null, responseBody: null, errorMessage: message };
    } finally {
      clearTimeout(timer);
    }
  }

  // close() runs after the dispatcher's own wait: whatever is still in flight is cut (and resent later).
  return { send, close: () => agent.destroy() };
}

/** Keeps the first KEEP_BYTES (whole UTF-8 characters only); stops reading past READ_CAP_BYTES. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (keptBytes < KEEP_BYTES) {
      const part = chunk.subarray(0, KEEP_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (total > READ_CAP_BYTES) {
      body.destroy();
      break;
    }
  }
  return new StringDecoder('utf8').write(Buffer.concat(kept, keptBytes));
}

function describeFailure(err: unknown): string {
  if (err instanceof OutboundAddressError) return err.message;
  const cause = err instanceof Error && err.cause instanceof OutboundAddressError ? err.cause : null;
  if (cause) return cause.message;
  const code = (err as { code?: unknown }).code;
  const text = err instanceof Error ? err.message : String(err);
  return typeof code === 'string' ? `${code}: ${text}` : text;
}
