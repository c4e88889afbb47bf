/**
 * The floor for the gateway: a bare pass-through proxy on the same stack (uWS + an undici keep-alive
 * Pool per upstream origin). `POST /<anything>/v1/<suffix>` goes to `<upstream base>/<suffix>`, so it takes
 * the gateway's URL shape. Response chunks arriving in one tick are coalesced into one corked write.
 *
 *   node dist/bench/bare-proxy.js --port N --upstream http://127.0.0.1:9100/v1
 */
import { EventEmitter } from 'node:events';
import { STATUS_CODES } from 'node:http';
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import type { HttpResponse } from 'uWebSockets.js';
import { Pool } from 'undici';

const SKIP_REQUEST = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'expect', 'upgrade']);
const SKIP_RESPONSE = new Set(['connection', 'content-length', 'transfer-encoding', 'keep-alive', 'date']);

const { values } = parseArgs({ options: { port: { type: 'string' }, upstream: { type: 'string' }, host: { type: 'string' } } });
if (!values.upstream) throw new Error('--upstream URL is required');
const upstream = new URL(values.upstream);
const basePath = upstream.pathname.replace(/\/$/, '');
const pool = new Pool(upstream.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 60_000 });

/**
 * Per exchange; also the undici abort signal (an EventEmitter is accepted, and is far cheaper than an
 * AbortController). uWS forbids touching `res` after onAborted, which must be attached in the handler.
 */
class Exchange extends EventEmitter {
  aborted = false;
  done = false;
}

function forward(res: HttpResponse, ex: Exchange, method: string, path: string, headers: Record<string, string>, body: Buffer | null): void {
  pool.request({ method, path, headers, body, signal: ex }).then(
    (up) => {
      if (ex.aborted) return void up.body.destroy();
      const stream = up.body;
      let pending: Buffer[] = [];
      let scheduled = false;
      let headersSent = false;
      const writeHead = (): void => {
        headersSent = true;
        res.writeStatus(`${up.statusCode} ${STATUS_CODES[up.statusCode] ?? 'Unknown'}`);
        for (const [k, v] of Object.entries(up.headers)) {
          if (v === undefined || SKIP_RESPONSE.has(k)) continue;
          if (Array.isArray(v)) for (const one of v) res.writeHeader(k, one);
          else res.writeHeader(k, v);
        }
      };
      const flush = (): void => {
        scheduled = false;
        if (ex.aborted || ex.done || pending.length === 0) return;
        const out = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
        pending = [];
        let ok = true;
        res.cork(() => {
          if (!headersSent) writeHead();
          ok = res.write(out);
        });
        if (!ok) {
          stream.pause();
          res.onWritable(() => {
            stream.resume();
            return true;
          });
        }
      };
      stream.on('data', (chunk: Buffer) => {
        pending.push(chunk);
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(flush);
        }
      });
      stream.on('end', () => {
        if (ex.aborted || ex.done) return;
        ex.done = true;
        const rest = pending.length === 0 ? undefined : pending.length === 1 ? pending[0] : Buffer.concat(pending);
        pending = [];
        res.cork(() => {
          if (!headersSent) writeHead();
          res.end(rest);
        });
      });
      stream.on('error', () => {
        if (ex.aborted || ex.done) return;
        ex.done = true;
        res.close();
      });
    },
    () => {
      if (ex.aborted || ex.done) return;
      ex.done = true;
      res.cork(() => {
        res.writeStatus('502 Bad Gateway').writeHeader('content-type', 'application/json');
        res.end('{"error":{"message":"upstream unreachable","type":"server_error","code":"bad_gateway","param":null}}');
      });
    },
  );
}

const app = uWS.App();
app.any('/*', (res, req) => {
  const method = req.getCaseSensitiveMethod();
  const url = req.getUrl();
  const query = req.getQuery();
  const at = url.indexOf('/v1/');
  const suffix = at >= 0 ? url.slice(at + 3) : url;
  const path = `${basePath}${suffix}${query ? `?${query}` : ''}`;
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    if (!SKIP_REQUEST.has(k)) headers[k] = v;
  });
  const ex = new Exchange();
  res.onAborted(() => {
    ex.aborted = true;
    ex.emit('abort');
  });
  if (method === 'GET' || method === 'HEAD') return forward(res, ex, method, path, headers, null);
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    // uWS neuters the ArrayBuffer when this callback returns: copy it.
    if (chunk.byteLength > 0) chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) forward(res, ex, method, path, headers, chunks.length === 0 ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
});

const host = values.host ?? '127.0.0.1';
app.listen(host, Number(values.port ?? 0), (socket) => {
  if (!socket) {
    process.stderr.write(`bare proxy: cannot listen on ${host}:${values.port ?? 0}\n`);
    process.exit(1);
  }
  process.stdout.write(`bare proxy listening on http://${host}:${uWS.us_socket_local_port(socket)}\n`);
});

const stop = (): void => {
  void pool.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
