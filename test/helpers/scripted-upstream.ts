/**
 * A model server that answers every POST with exactly what the test set last: any status, headers and
 * body bytes. The way to see what the gateway makes of answers the simulator never sends: error bodies in
 * any server's shape (TGI's, Ollama's, FastAPI's, plain text, an HTML page, an HTTP-date Retry-After),
 * error objects inside an HTTP 200, error frames mid-stream, a stream that closes without `[DONE]`. GET
 * (the health probe's /models) answers an empty model list.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeKeys, testConfig, type TestKeys } from './configs.js';
import { startGatewayProcess, type GatewayProcess } from './processes.js';
import { useStarted } from './suite.js';
import { openUsageDb, type UsageDb } from './usage-db.js';

export interface ScriptedAnswer {
  /** Default 200. */
  readonly status?: number;
  readonly body: string;
  /** Default: text/event-stream when the body holds SSE lines, application/json for JSON, else text/plain. */
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ScriptedUpstream {
  /** Base URL with /v1, for an endpoint's upstream.base_url. */
  readonly url: string;
  /** Every following POST gets this answer. */
  answer(next: ScriptedAnswer): void;
  close(): Promise<void>;
}

/** One SSE `data:` event for a chat chunk with these members after the header (`,"choices":[...]`). */
export function chunkEvent(members: string): string {
  return `data: {"id":"up","object":"chat.completion.chunk","created":1700000000,"model":"up"${members}}\n\n`;
}

function contentTypeOf(body: string): string {
  if (body.startsWith('data:') || body.startsWith('event:')) return 'text/event-stream';
  return body.startsWith('{') || body.startsWith('[') ? 'application/json' : 'text/plain';
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
      const { status = 200, body } = current;
      res.writeHead(status, { 'content-type': current.contentType ?? contentTypeOf(body), ...current.headers }).end(body);
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

export interface ScriptedSuite {
  readonly upstream: ScriptedUpstream;
  readonly gw: GatewayProcess;
  readonly keys: TestKeys;
  /** The gateway's usage ledger, open for reading. */
  readonly ledger: UsageDb;
}

/** A gateway on the standard test config in front of a scripted upstream, started once per file. */
export function useScriptedSuite(): ScriptedSuite {
  return useStarted(
    async () => {
      const keys = makeKeys();
      const upstream = await startScriptedUpstream();
      const gw = await startGatewayProcess(testConfig(upstream.url, keys));
      return { upstream, gw, keys, ledger: openUsageDb(gw.dbPath) };
    },
    async ({ ledger, gw, upstream }) => {
      ledger.close();
      await gw.stop();
      await upstream.close();
    },
  );
}
