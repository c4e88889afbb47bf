/**
 * Our uWS request and reply as the web-standard `Request` and `Response` the SDK's
 * WebStandardStreamableHTTPServerTransport takes and returns. The response body (an SSE stream for a POST
 * that carries requests) is written out chunk by chunk as the SDK produces it, never buffered, respecting
 * uWS backpressure; a client that leaves cancels the body, which the SDK sees as a closed stream.
 */
import type { IncomingRequest } from '../http/request.js';
import type { Reply } from '../http/reply.js';

/**
 * The request as the SDK reads it. `body` was read by the route with the API's size cap; it is JSON, so it
 * is handed over as text (the SDK parses it with `req.json()`).
 */
export function webRequestOf(req: IncomingRequest, body: Buffer | null): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) headers.set(k, v);
  const host = req.header('host') ?? 'localhost';
  const url = `http://${host}${req.path}${req.query ? `?${req.query}` : ''}`;
  return new Request(url, { method: req.method, headers, body: body && body.length > 0 ? body.toString('utf8') : null });
}

/** Hop-by-hop and framing headers: uWS writes its own. */
const NOT_COPIED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-type']);

/** Who may end a response's stream before the SDK does (mcp/pending-answers.ts), and sees what it carries. */
export interface StreamWatch {
  /** The stream is open: `end` ends it. */
  attach(end: () => void): void;
  /** A chunk of the SDK's, once written to the client. */
  sent(chunk: Uint8Array): void;
}

/**
 * `leading`: SSE events of answers the route gave itself (request-screen.ts), sent before the SDK's own:
 * in its stream, or as the whole answer when the SDK had only notifications left (its 202). An error of
 * the SDK's for the whole POST (a JSON 4xx) stands alone: no request of it ran.
 */
export async function sendWebResponse(res: Response, req: IncomingRequest, reply: Reply, leading = '', watch?: StreamWatch): Promise<void> {
  res.headers.forEach((value, name) => {
    if (!NOT_COPIED.has(name)) reply.setHeader(name, value);
  });
  const contentType = res.headers.get('content-type');
  if (res.body === null || contentType === null) {
    await res.body?.cancel();
    if (leading !== '' && res.status === 202) reply.send(200, leading, 'text/event-stream');
    else reply.empty(res.status);
    return;
  }
  const reader = res.body.getReader();
  const stop = (): void => void reader.cancel().catch(() => undefined);
  req.onAbort(stop);
  // A graceful stop's deadline ends the stream: the client initializes again elsewhere.
  reply.onDrainDeadline(() => {
    stop();
    reply.endStream();
  });
  // Ended when what was sent is all the stream will carry (a request of it was cancelled): the loop below ends with it.
  watch?.attach(stop);
  reply.beginStream(res.status, contentType);
  if (leading !== '' && contentType.startsWith('text/event-stream')) reply.write(Buffer.from(leading));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || !reply.open) break;
      const written = reply.write(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      // After the write: the chunk that settles the last request must reach the client before the end.
      watch?.sent(value);
      if (!written) await writable(req, reply);
    }
  } catch {
    // The SDK ended the stream with an error, or the client left: what was sent is all there is.
  } finally {
    reply.endStream();
  }
}

/** Resolves when the socket can take more, or the client has gone. */
function writable(req: IncomingRequest, reply: Reply): Promise<void> {
  return new Promise((resolve) => {
    reply.onWritable(resolve);
    req.onAbort(resolve);
  });
}
