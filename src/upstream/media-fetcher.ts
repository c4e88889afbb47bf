/**
 * Server-side fetches of image URLs (SPEC "Message object"). Every hop goes through the outbound guard
 * shared with webhooks (upstream/outbound-guard.ts): the URL is checked (scheme, no credentials, every
 * resolved address global unicast unless the operator relaxed it) and the connection's own lookup refuses
 * a name re-pointed at a private address since (DNS rebinding). Redirects are followed by hand, so each
 * Location is checked like the first URL. Size and time caps apply per image; the body must be a PNG,
 * JPEG, GIF or WebP by its magic bytes. Requests carry a descriptive User-Agent.
 */
import { Agent } from 'undici';
import { imageMimeOf } from '../core/chat/image-types.js';
import { assertLiteralAllowed, checkOutboundUrl, guardedLookup, OutboundAddressError, type OutboundPolicy } from './outbound-guard.js';

export interface MediaFetcherOptions {
  readonly policy: OutboundPolicy;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly maxRedirects: number;
  readonly userAgent: string;
}

export interface FetchedImage {
  readonly mime: string;
  readonly data: Buffer;
}

/** Why a URL could not be used; the message completes "Could not fetch <url>: ...". */
export class MediaFetchError extends Error {
  override readonly name = 'MediaFetchError';
}

export interface MediaFetcher {
  fetchImage(url: string, signal: AbortSignal): Promise<FetchedImage>;
  close(): Promise<void>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export function createMediaFetcher(opts: MediaFetcherOptions): MediaFetcher {
  const agent = new Agent({ connections: 16, keepAliveTimeout: 5000, connect: { lookup: guardedLookup(opts.policy), timeout: opts.timeoutMs } });

  async function fetchImage(raw: string, outer: AbortSignal): Promise<FetchedImage> {
    const signal = AbortSignal.any([outer, AbortSignal.timeout(opts.timeoutMs)]);
    let current = raw;
    for (let hop = 0; ; hop++) {
      const check = await checkOutboundUrl(current, opts.policy);
      if (!check.ok) throw new MediaFetchError(hop === 0 ? `the URL ${check.reason}` : `it redirects to ${current}, which ${check.reason}`);
      const url = check.url;
      let res;
      try {
        assertLiteralAllowed(url, opts.policy);
        res = await agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          headers: { 'user-agent': opts.userAgent, accept: 'image/png, image/jpeg, image/gif, image/webp' },
          signal,
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
        });
      } catch (err) {
        throw new MediaFetchError(describe(err, signal, opts.timeoutMs));
      }
      if (REDIRECTS.has(res.statusCode)) {
        await res.body.dump().catch(() => undefined);
        const location = res.headers.location;
        if (typeof location !== 'string') throw new MediaFetchError(`it answered HTTP ${res.statusCode} without a Location`);
        if (hop >= opts.maxRedirects) throw new MediaFetchError(`it redirects more than ${opts.maxRedirects} times`);
        current = new URL(location, url).toString();
        continue;
      }
      if (res.statusCode !== 200) {
        await res.body.dump().catch(() => undefined);
        throw new MediaFetchError(`it answered HTTP ${res.statusCode}`);
      }
      return readImage(res.body, res.headers['content-length'], signal);
    }
  }

  async function readImage(body: AsyncIterable<Buffer> & { destroy(): unknown }, declared: unknown, signal: AbortSignal): Promise<FetchedImage> {
    if (Number(declared) > opts.maxBytes) {
      body.destroy();
      throw new MediaFetchError(`the image is larger than ${opts.maxBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > opts.maxBytes) {
          body.destroy();
          throw new MediaFetchError(`the image is larger than ${opts.maxBytes} bytes`);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof MediaFetchError) throw err;
      throw new MediaFetchError(describe(err, signal, opts.timeoutMs));
    }
    const data = Buffer.concat(chunks, size);
    const mime = imageMimeOf(data.subarray(0, 16));
    if (!mime) throw new MediaFetchError('the response is not a PNG, JPEG, GIF or WebP image');
    return { mime, data };
  }

  return { fetchImage, close: () => agent.close() };
}

/** undici's own timers run on the same budget as our signal; whichever fires first, it is the timeout. */
const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function describe(err: unknown, signal: AbortSignal, timeoutMs: number): string {
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  if (signal.aborted || (typeof code === 'string' && UNDICI_TIMEOUTS.has(code))) return `it did not answer within ${timeoutMs} ms`;
  const guard = err instanceof OutboundAddressError ? err : err instanceof Error && err.cause instanceof OutboundAddressError ? err.cause : null;
  if (guard) return `the connection was ${guard.message}`;
  return typeof code === 'string' ? `the connection failed (${code})` : 'the connection failed';
}
