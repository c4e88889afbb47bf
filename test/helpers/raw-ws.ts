/**
 * A bare WebSocket client over a TCP socket, for what a browser-like client cannot do: read the HTTP
 * answer of a refused upgrade, and stop reading (socket paused) while still sending.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export interface RefusedUpgrade {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

export interface RawWs {
  readonly socket: Socket;
  readonly protocol: string | null;
  /** The 101 answer's headers (lower-case names), e.g. x-request-id: the session's usage row. */
  readonly headers: Record<string, string>;
  sendText(text: string): boolean;
  /** Frames received so far (text frames as strings, close frames as {close: code, reason}). */
  readonly frames: (string | { close: number; reason: string })[];
}

function handshake(port: number, path: string, headers: Record<string, string>): { socket: Socket; request: string } {
  const socket = connect(port, '127.0.0.1');
  const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`, 'Sec-WebSocket-Version: 13'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return { socket, request: `${lines.join('\r\n')}\r\n\r\n` };
}

/** Opens a WebSocket, or resolves with the HTTP refusal (status, headers, parsed JSON body). */
export function rawWebSocket(port: number, path: string, headers: Record<string, string>): Promise<RawWs | RefusedUpgrade> {
  const { socket, request } = handshake(port, path, headers);
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.toString('latin1', 0, end).split('\r\n');
      const status = Number(head[0]?.split(' ')[1]);
      const hdrs: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const i = line.indexOf(':');
        hdrs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const rest = buf.subarray(end + 4);
      if (status !== 101) {
        socket.off('data', onData);
        let body = rest;
        const finish = (): void => {
          socket.destroy();
          resolve({ status, headers: hdrs, body: JSON.parse(body.toString('utf8')) as unknown });
        };
        const length = Number(hdrs['content-length']);
        if (body.length >= length) return finish();
        socket.on('data', (more: Buffer) => {
          body = Buffer.concat([body, more]);
          if (body.length >= length) finish();
        });
        return;
      }
      socket.off('data', onData);
      resolve(openSocket(socket, rest, hdrs));
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(request);
  });
}

function openSocket(socket: Socket, initial: Buffer, headers: Record<string, string>): RawWs {
  const frames: RawWs['frames'] = [];
  let buf = initial;
  const parse = (): void => {
    for (;;) {
      if (buf.length < 2) return;
      const opcode = (buf[0] ?? 0) & 0x0f;
      let len = (buf[1] ?? 0) & 0x7f;
      let at = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        at = 10;
      }
      if (buf.length < at + len) return;
      const payload = buf.subarray(at, at + len);
      if (opcode === 1) frames.push(payload.toString('utf8'));
      else if (opcode === 8) frames.push({ close: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString('utf8') });
      buf = buf.subarray(at + len);
    }
  };
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    parse();
  });
  parse();
  return {
    socket,
    protocol: headers['sec-websocket-protocol'] ?? null,
    headers,
    frames,
    sendText(text) {
      const payload = Buffer.from(text);
      const mask = randomBytes(4);
      const len = payload.length;
      const head = len < 126 ? Buffer.from([0x81, 0x80 | len]) : len < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10);
      if (len >= 126 && len < 65_536) {
        head[0] = 0x81;
        head[1] = 0x80 | 126;
        head.writeUInt16BE(len, 2);
      } else if (len >= 65_536) {
        head[0] = 0x81;
        head[1] = 0x80 | 127;
        head.writeBigUInt64BE(BigInt(len), 2);
      }
      for (let i = 0; i < len; i++) payload[i] = (payload[i] ?? 0) ^ (mask[i % 4] ?? 0);
      return socket.write(Buffer.concat([head, mask, payload]));
    },
  };
}

export function isRefused(r: RawWs | RefusedUpgrade): r is RefusedUpgrade {
  return 'status' in r;
}
