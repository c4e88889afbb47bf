/**
 * A model server that answers every request with exactly the bytes the test set last (status, content
 * type, body), to see what the gateway makes of answers the simulator never sends: error objects inside an
 * HTTP 200, error frames mid-stream, a stream that closes without `[DONE]`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  readonly status?: number;
  /** Default: text/event-stream when the body holds `data:` lines, else application/json. */
  readonly contentType?: string;
  readonly body: string;
}

export interface ScriptedUpstream {
  /** Base URL with /v1, for an endpoint's upstream.base_url. */
  readonly url: string;
  /** What every request from now on is answered with. */
  answerWith(answer: ScriptedAnswer): void;
  close(): Promise<void>;
}

/** One SSE `data:` event for a chat chunk with these members after the header (`,"choices":[...]`). */
export function chunkEvent(members: string): string {
  return `data: {"id":"up","object":"chat.completion.chunk","created":1700000000,"model":"up"${members}}\n\n`;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  let answer: ScriptedAnswer = { status: 500, body: '{"error":{"message":"no answer scripted"}}' };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const { status = 200, body } = answer;
      const contentType = answer.contentType ?? (body.startsWith('data:') || body.startsWith('event:') ? 'text/event-stream' : 'application/json');
      res.writeHead(status, { 'content-type': contentType }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    answerWith(next) {
      answer = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
