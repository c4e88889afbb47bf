/**
 * HTTP/1.1 over a raw socket, for what fetch hides: a request written in pieces (chunked, oversized,
 * never finished), every byte the server sends back, and a strict reading of chunked framing (curl's
 * "Malformed encoding" and the SDK's "Invalid character in chunk size" are what clients see of a bad one).
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The body with the transfer framing removed. */
  readonly body: string;
}

export interface RawExchange {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): Buffer;
  /** Resolves when the server has closed (or reset) the connection, with what it sent. */
  readonly closed: Promise<{ bytes: Buffer; error: Error | null }>;
  /** Writes, resolving false instead of throwing once the connection is gone. */
  write(data: string | Buffer): Promise<boolean>;
}

export function openRaw(baseUrl: string): Promise<RawExchange> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      const chunks: Buffer[] = [];
      socket.on('data', (d: Buffer) => chunks.push(d));
      let failure: Error | null = null;
      socket.on('error', (err) => {
        failure = err;
      });
      const closed = new Promise<{ bytes: Buffer; error: Error | null }>((done) => socket.on('close', () => done({ bytes: Buffer.concat(chunks), error: failure })));
      resolve({
        socket,
        received: () => Buffer.concat(chunks),
        closed,
        write: (data) =>
          new Promise((ok) => {
            if (socket.destroyed || !socket.writable) return ok(false);
            socket.write(data, (err) => ok(!err));
          }),
      });
    });
    socket.once('error', reject);
  });
}

/** Reads the first complete response in `bytes`; throws on malformed framing, returns null if incomplete. */
export function parseResponse(bytes: Buffer): (RawResponse & { readonly rest: Buffer }) | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
  if (!status) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    headers[name] = headers[name] === undefined ? line.slice(i + 1).trim() : `${headers[name]}, ${line.slice(i + 1).trim()}`;
  }
  let at = headEnd + 4;
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = bytes.indexOf('\r\n', at);
      if (lineEnd < 0) return null;
      const sizeText = bytes.subarray(at, lineEnd).toString('latin1');
      if (!/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error(`invalid chunk size ${JSON.stringify(sizeText)} at byte ${at}`);
      const size = parseInt(sizeText, 16);
      const dataStart = lineEnd + 2;
      if (bytes.length < dataStart + size + 2) return null;
      if (bytes.subarray(dataStart + size, dataStart + size + 2).toString('latin1') !== '\r\n') throw new Error(`chunk of ${size} bytes at byte ${at} is not followed by CRLF`);
      at = dataStart + size + 2;
      if (size === 0) break;
      parts.push(bytes.subarray(dataStart, dataStart + size));
    }
    return { status, headers, body: Buffer.concat(parts).toString('utf8'), rest: bytes.subarray(at) };
  }
  const length = Number(headers['content-length'] ?? 0);
  if (bytes.length < at + length) return null;
  return { status, headers, body: bytes.subarray(at, at + length).toString('utf8'), rest: bytes.subarray(at + length) };
}

/** Polls `exchange` until a complete response has arrived (or the connection closed without one). */
export async function readResponse(exchange: RawExchange, timeoutMs = 10_000): Promise<RawResponse> {
  const until = Date.now() + timeoutMs;
  let closed = false;
  void exchange.closed.then(() => {
    closed = true;
  });
  for (;;) {
    const parsed = parseResponse(exchange.received());
    if (parsed) return parsed;
    if (closed) throw new Error(`the connection closed before a complete response: ${JSON.stringify(exchange.received().toString('latin1').slice(0, 300))}`);
    if (Date.now() > until) throw new Error(`no complete response within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A request head (and optional body) as bytes. */
export function requestHead(method: string, path: string, headers: Record<string, string>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

/** One chunk of a chunked request body. */
export function chunk(data: Buffer | string): Buffer {
  const b = Buffer.isBuffer(data) ? data : Buffer.from(data);
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
}
