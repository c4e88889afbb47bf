/**
 * A request the gateway makes of itself: no socket, the same IncomingRequest and Reply a route sees, so
 * background work (batch lines, docs/decisions.md "Batches") runs the very route code live traffic does
 * and gets back the exact status and body a client would have. The "socket" is an object with the few
 * methods Reply and IncomingRequest call, recording what is written.
 */
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse } from 'uWebSockets.js';
import { GatewayError } from '../errors.js';
import { BodyGate } from './body-gate.js';
import { Reply } from './reply.js';
import { IncomingRequest } from './request.js';
import { newRequestId } from './request-id.js';

export interface SyntheticAnswer {
  readonly status: number;
  readonly body: string;
  readonly requestId: string;
  /** The catalogue code when the answer is an error envelope. */
  readonly errorCode: string | null;
  /** Response headers, names lower-cased. */
  readonly headers: ReadonlyMap<string, string>;
}

export interface SyntheticRequest {
  readonly req: IncomingRequest;
  readonly reply: Reply;
  /** Runs `handle` as the server runs a route: a throw becomes the error envelope. */
  serve(handle: () => Promise<void>): Promise<SyntheticAnswer>;
  /** Aborts it as a client going away would (a cancelled batch, a stopping gateway). */
  abort(): void;
}

/** `requestId`: the id to run under (a background response runs under its own id); default a new one. */
export function createSyntheticRequest(opts: { method: string; path: string; headers: Record<string, string>; body: Buffer; idPrefix: string; requestId?: string }): SyntheticRequest {
  const chunks: Buffer[] = [];
  const headers = new Map<string, string>();
  const res = {
    cork(cb: () => void) {
      cb();
      return res;
    },
    writeStatus: () => res,
    writeHeader(name: string | Buffer, value: string) {
      headers.set(Buffer.from(name).toString('latin1').toLowerCase(), value);
      return res;
    },
    write(chunk: string | Buffer) {
      chunks.push(Buffer.from(chunk));
      return true;
    },
    end(body?: string | Buffer) {
      if (body !== undefined) chunks.push(Buffer.from(body));
      return res;
    },
    endWithoutBody: () => res,
    onWritable: () => res,
    getRemoteAddressAsText: () => new TextEncoder().encode('127.0.0.1').buffer,
  };
  const uwsReq = {
    getQuery: () => '',
    forEach(cb: (k: string, v: string) => void) {
      for (const [k, v] of Object.entries(opts.headers)) cb(k.toLowerCase(), v);
    },
  };
  const requestId = opts.requestId ?? newRequestId(opts.idPrefix);
  const req = new IncomingRequest(res as unknown as UwsResponse, uwsReq as unknown as UwsRequest, opts.method, opts.path, requestId, false);
  const reply = new Reply(res as unknown as UwsResponse, requestId);
  const gate = new BodyGate(true, 0);
  req.startBody((handler) => handler(toArrayBuffer(opts.body), true), Number.MAX_SAFE_INTEGER, gate);

  return {
    req,
    reply,
    abort() {
      reply.markAborted();
      req.markAborted();
    },
    async serve(handle) {
      let errorCode: string | null = null;
      try {
        await handle();
      } catch (err) {
        errorCode = err instanceof GatewayError ? err.code : 'internal_error';
        if (!reply.headWritten) reply.error(err);
        else reply.endStream();
      }
      if (reply.open && !reply.headWritten) {
        errorCode = 'internal_error';
        reply.error(new GatewayError('internal_error'));
      }
      return { status: reply.status, body: Buffer.concat(chunks).toString('utf8'), requestId, errorCode, headers };
    },
  };
}

function toArrayBuffer(b: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(b.byteLength);
  new Uint8Array(copy).set(b);
  return copy;
}
