/**
 * SPEC "Message object": image_url parts with an http(s) URL are fetched server-side and inlined as data:
 * URLs before the upstream body is built, on every route and by default ("on everywhere including the
 * faithful floor"); `X-Service-Augment-Media-URL-Resolution: off` sends the URLs as they are. The fetches
 * of one request run in parallel. The result is a list of part edits (core/chat/part-edits.ts), applied
 * with the transcripts of audio parts: only those URLs change, every other byte of the body stays the
 * client's. A URL that cannot be used gives 400 naming it.
 */
import type { MediaConfig } from '../../config.js';
import { mediaUrlResolutionEnabled } from '../../core/chat/header-flags.js';
import type { PartEdit } from '../../core/chat/part-edits.js';
import { GatewayError } from '../../errors.js';
import type { TurnCaller } from '../turn-io.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import { MediaFetchError, type MediaFetcher } from '../../upstream/media-fetcher.js';

export interface MediaResolver {
  /** The image_url parts with their URL replaced by the fetched data: URL; none when nothing is fetched. */
  images(parsed: Record<string, unknown>, chat: ChatRequest, req: TurnCaller): Promise<PartEdit[]>;
}

interface ImageRef {
  readonly message: number;
  readonly part: number;
  readonly url: string;
}

type Json = Record<string, unknown>;

export function createMediaResolver(fetcher: MediaFetcher, config: MediaConfig): MediaResolver {
  return {
    async images(parsed, chat, req) {
      const refs = remoteImages(chat);
      if (refs.length === 0 || !mediaUrlResolutionEnabled(req.headers)) return [];
      const urls = [...new Set(refs.map((r) => r.url))];
      let total = 0;
      const fetched = new Map<string, string>();
      await Promise.all(
        urls.map(async (url) => {
          try {
            const image = await fetcher.fetchImage(url, req.signal);
            total += image.data.length;
            if (total > config.max_total_bytes) throw new MediaFetchError(`the images of this request exceed ${config.max_total_bytes} bytes in total`);
            fetched.set(url, `data:${image.mime};base64,${image.data.toString('base64')}`);
          } catch (err) {
            const ref = refs.find((r) => r.url === url) as ImageRef;
            const reason = err instanceof MediaFetchError ? err.message : 'the fetch failed';
            throw new GatewayError('invalid_request', {
              param: `messages[${ref.message}].content[${ref.part}].image_url.url`,
              message: `Could not fetch the image at ${url}: ${reason}. Send a reachable PNG, JPEG, GIF or WebP URL, or a data: URL.`,
            });
          }
        }),
      );
      const messages = parsed.messages as Json[];
      return refs.map((ref) => {
        const part = ((messages[ref.message] as Json).content as Json[])[ref.part] as Json;
        return { message: ref.message, part: ref.part, value: { ...part, image_url: { ...(part.image_url as Json), url: fetched.get(ref.url) } } };
      });
    },
  };
}

function remoteImages(chat: ChatRequest): ImageRef[] {
  const refs: ImageRef[] = [];
  chat.messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((p, j) => {
      if (p.type === 'image_url' && /^https?:/i.test(p.image_url.url)) refs.push({ message: i, part: j, url: p.image_url.url });
    });
  });
  return refs;
}
