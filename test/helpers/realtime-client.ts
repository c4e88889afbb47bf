/** A realtime client for API tests: undici's WebSocket, with every server event collected and awaitable. */
import { WebSocket } from 'undici';

export type ServerEvent = Record<string, unknown> & { type: string };

export interface RealtimeClient {
  readonly ws: WebSocket;
  readonly events: ServerEvent[];
  send(event: Record<string, unknown>): void;
  /** Resolves with the first event of that type not yet taken (in arrival order). */
  next(type: string, timeoutMs?: number): Promise<ServerEvent>;
  closed(): Promise<{ code: number; reason: string }>;
  close(code?: number, reason?: string): void;
}

export function openRealtime(url: string, opts: { key?: string; protocols?: string[]; headers?: Record<string, string> } = {}): Promise<RealtimeClient> {
  const headers: Record<string, string> = { ...opts.headers, ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}) };
  const ws = new WebSocket(url, { headers, protocols: opts.protocols ?? [] });
  const events: ServerEvent[] = [];
  const taken = new Set<ServerEvent>();
  const waiters: (() => void)[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason })));
  ws.addEventListener('message', (e) => {
    if (typeof e.data === 'string') events.push(JSON.parse(e.data) as ServerEvent);
    waiters.splice(0).forEach((w) => w());
  });
  const client: RealtimeClient = {
    ws,
    events,
    send: (event) => ws.send(JSON.stringify(event)),
    next(type, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${type} event within ${timeoutMs} ms; got ${events.map((e) => e.type).join(', ')}`)), timeoutMs);
        const check = (): void => {
          const found = events.find((e) => e.type === type && !taken.has(e));
          if (found) {
            taken.add(found);
            clearTimeout(timer);
            resolve(found);
          } else waiters.push(check);
        };
        check();
      });
    },
    closed: () => closed,
    close: (code?: number, reason?: string) => ws.close(code, reason),
  };
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => resolve(client));
    ws.addEventListener('error', () => reject(new Error('the WebSocket handshake failed')));
  });
}

export const appendEvent = (pcm: Buffer): Record<string, unknown> => ({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });

/** Splits audio into real-time-sized appends (20 ms at 24 kHz). */
export function chunks(pcm: Buffer, bytes = 960): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < pcm.length; at += bytes) out.push(pcm.subarray(at, at + bytes));
  return out;
}
