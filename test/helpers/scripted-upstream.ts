/**
 * A model server that answers every POST with whatever the test last set: any status, headers and raw
 * body bytes (a JSON error of any server's shape, plain text, an HTML page). The way to see what the
 * gateway makes of error answers the simulator does not produce (TGI's, Ollama's, FastAPI's, a 413 with
 * an HTTP-date Retry-After). GET (the health probe's /models) answers an empty model list.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ScriptedUpstream {
  /** Base URL with /v1, for an endpoint's upstream.base_url. */
  readonly url: string;
  /** Every following POST gets this answer. */
  answer(next: ScriptedAnswer): void;
  close(): Promise<void>;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  let current: ScriptedAnswer = { status: 500, body: '{"error":{"message":"no answer set"}}' };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}');
        return;
      }
      const json = current.body.startsWith('{') || current.body.startsWith('[');
      res.writeHead(current.status, { 'content-type': json ? 'application/json' : 'text/plain', ...current.headers }).end(current.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    answer(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
