/**
 * Sequential requests over one raw keep-alive TCP socket: time from writing the request to the first
 * response body byte (TTFB), and to the end of the response. A raw socket keeps client overhead out of
 * sub-millisecond figures. Understands Content-Length and chunked bodies only (all our targets send one).
 */
import { connect, type Socket } from 'node:net';
import { percentile } from './load.js';

export interface SequentialResult {
  readonly samples: number;
  readonly ttfbP50: number | null;
  readonly ttfbP99: number | null;
  readonly totalP50: number | null;
  readonly totalP99: number | null;
  readonly non2xx: number;
}

interface Timing {
  status: number;
  ttfb: number;
  total: number;
}

function once(socket: Socket, raw: Buffer): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    let head: string | null = null;
    let status = 0;
    let ttfb = -1;
    let bodyLen = 0;
    let contentLength = -1;
    let tail = '';
    let pending: Buffer = Buffer.alloc(0);
    const ms = (): number => Number(process.hrtime.bigint() - start) / 1e6;
    const finish = (): void => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      resolve({ status, ttfb, total: ms() });
    };
    const onBody = (chunk: Buffer): void => {
      if (chunk.length === 0) return;
      if (ttfb < 0) ttfb = ms();
      bodyLen += chunk.length;
      if (contentLength >= 0) {
        if (bodyLen >= contentLength) finish();
        return;
      }
      tail = (tail + chunk.toString('latin1')).slice(-7);
      if (tail.endsWith('0\r\n\r\n') && (bodyLen === 5 || tail.endsWith('\r\n0\r\n\r\n'))) finish();
    };
    const onData = (chunk: Buffer): void => {
      if (head !== null) return onBody(chunk);
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      head = pending.subarray(0, end).toString('latin1');
      status = Number(head.slice(9, 12));
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      contentLength = cl ? Number(cl[1]) : /\r\ntransfer-encoding:\s*chunked/i.test(head) ? -1 : 0;
      const rest = pending.subarray(end + 4);
      if (contentLength === 0) return finish();
      onBody(rest);
    };
    const onError = (err: Error): void => reject(err);
    const onClose = (): void => reject(new Error('connection closed mid-response'));
    socket.on('data', onData);
    socket.once('error', onError);
    socket.once('close', onClose);
    socket.write(raw);
  });
}

export async function sequential(
  url: string,
  headers: Record<string, string>,
  body: string,
  count: number,
): Promise<SequentialResult> {
  const u = new URL(url);
  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
      s.once('connect', () => {
        s.off('error', reject);
        s.on('error', () => undefined); // errors between requests surface as a failed write/close
        resolve(s);
      });
      s.once('error', reject);
    });
  let socket = await open();
  const bytes = Buffer.from(body);
  const lines = [
    `POST ${u.pathname}${u.search} HTTP/1.1`,
    `host: ${u.host}`,
    'content-type: application/json',
    `content-length: ${bytes.length}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  const raw = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]);
  const ttfb: number[] = [];
  const total: number[] = [];
  let non2xx = 0;
  try {
    for (let i = 0; i < count; i++) {
      let t: Timing;
      try {
        t = await once(socket, raw);
      } catch {
        // The server closed the connection (e.g. `connection: close` on an error): retry on a new one.
        socket.destroy();
        socket = await open();
        t = await once(socket, raw);
      }
      if (t.status < 200 || t.status > 299) non2xx++;
      ttfb.push(t.ttfb < 0 ? t.total : t.ttfb);
      total.push(t.total);
    }
  } finally {
    socket.destroy();
  }
  ttfb.sort((a, b) => a - b);
  total.sort((a, b) => a - b);
  return {
    samples: count,
    ttfbP50: percentile(ttfb, 50),
    ttfbP99: percentile(ttfb, 99),
    totalP50: percentile(total, 50),
    totalP99: percentile(total, 99),
    non2xx,
  };
}
