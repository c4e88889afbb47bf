/**
 * A chat-completions model server that holds every request until the test answers it, and tells when the
 * gateway gave up on one (its connection closed before an answer): the way to have a turn provably in
 * flight (background responses: cancel, restart) with no sleeps.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldRequest {
  readonly path: string;
  readonly body: string;
  /** Answers with this status and JSON body. */
  answer(status: number, body: unknown): void;
  /** Resolves when the gateway closed the connection without waiting for the answer. */
  readonly abandoned: Promise<void>;
}

export interface HeldUpstream {
  /** Base URL with /v1, for an endpoint's upstream.base_url. */
  readonly url: string;
  /** The next request to arrive (or the oldest one not yet taken). */
  next(): Promise<HeldRequest>;
  close(): Promise<void>;
}

/** A chat completion the held server answers with. */
export function completion(text: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-held',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'held',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
  };
}

export async function startHeldUpstream(): Promise<HeldUpstream> {
  const arrived: HeldRequest[] = [];
  const waiting: ((r: HeldRequest) => void)[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}');
        return;
      }
      open.add(res);
      let answered = false;
      const abandoned = new Promise<void>((resolve) => {
        res.on('close', () => {
          open.delete(res);
          if (!answered) resolve();
        });
      });
      const held: HeldRequest = {
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        abandoned,
        answer(status, body) {
          answered = true;
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        },
      };
      const waiter = waiting.shift();
      if (waiter) waiter(held);
      else arrived.push(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    next: () => {
      const first = arrived.shift();
      return first ? Promise.resolve(first) : new Promise<HeldRequest>((resolve) => waiting.push(resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
