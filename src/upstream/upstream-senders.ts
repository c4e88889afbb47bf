/**
 * How each kind of upstream call is sent to a server of its pool (upstream-client.ts picks the server and
 * retries): a streamed POST through undici's request, a streamed chat answer or a whole answer through our
 * own dispatch handlers, and how long each answer keeps its server counted busy.
 */
import type { Dispatcher, Pool } from 'undici';
import type { AttemptSpan } from '../tracing/trace-port.js';
import { AnswerStream } from './answer-stream.js';
import { BufferingHandler, type BufferedResponse } from './buffering-handler.js';
import type { UpstreamAbort, UpstreamCall, UpstreamResponse } from './upstream-client.js';
import type { EndpointPool, PoolServer } from './upstream-pool.js';

export interface Answer {
  readonly statusCode: number;
}

/** How one kind of call is sent to a server, and how long its answer keeps that server busy. */
export interface Sender<T extends Answer, C extends UpstreamCall> {
  send(origin: Pool, server: PoolServer, call: C, span: AttemptSpan | null): Promise<T>;
  hold(res: T, pool: EndpointPool, server: PoolServer): void;
  /** Ends an attempt's span once its answer is over (tracing on only). */
  settle(res: T, span: AttemptSpan): void;
}

export type ExchangeCall = UpstreamCall & { readonly body: Buffer; readonly signal: UpstreamAbort };

function headersOf(server: PoolServer, call: UpstreamCall, span: AttemptSpan | null): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': call.contentType ?? 'application/json' };
  if (call.accept) headers.accept = call.accept;
  if (server.apiKey) headers.authorization = `Bearer ${server.apiKey}`;
  // The trace goes on to the model server, under this attempt's span (W3C Trace Context).
  if (span !== null) {
    headers.traceparent = span.traceparent;
    if (span.tracestate !== null) headers.tracestate = span.tracestate;
  }
  return headers;
}

/** Streamed answers: undici's body stream; the server stays busy until that body is read or dropped. */
export const POST: Sender<UpstreamResponse, UpstreamCall> = {
  send: (origin, server, call, span) =>
    origin.request({
      method: 'POST',
      path: server.prefix + call.path,
      headers: headersOf(server, call, span),
      body: call.body,
      signal: call.signal,
      headersTimeout: call.headersTimeoutMs,
      bodyTimeout: call.bodyTimeoutMs,
    }),
  hold: (res, pool, server) => void res.body.once('close', () => pool.release(server)),
  settle: (res, span) => void res.body.once('close', () => span.end()),
};

/** The dispatch options of a call with bytes for a body (the handler is the abort's listener). */
function dispatchOptions(server: PoolServer, call: ExchangeCall, span: AttemptSpan | null): Dispatcher.DispatchOptions {
  return {
    method: 'POST',
    path: server.prefix + call.path,
    headers: headersOf(server, call, span),
    body: call.body,
    headersTimeout: call.headersTimeoutMs,
    bodyTimeout: call.bodyTimeoutMs,
  };
}

/** Streamed chat answers, read by our own dispatch handler (answer-stream.ts): busy until the answer is over. */
export const STREAM: Sender<AnswerStream, ExchangeCall> = {
  send: (origin, server, call, span) =>
    new Promise<AnswerStream>((resolve, reject) => {
      origin.dispatch(dispatchOptions(server, call, span), new AnswerStream(call.signal, resolve, reject));
    }),
  hold: (res, pool, server) => res.whenDone(() => pool.release(server)),
  settle: (res, span) => res.whenDone(() => span.end()),
};

/** Whole answers, read by our own dispatch handler: the server is free once the answer is in. */
export const EXCHANGE: Sender<BufferedResponse, ExchangeCall> = {
  send: (origin, server, call, span) =>
    new Promise<BufferedResponse>((resolve, reject) => {
      origin.dispatch(dispatchOptions(server, call, span), new BufferingHandler(call.signal, resolve, reject));
    }),
  hold: (_res, pool, server) => pool.release(server),
  settle: (_res, span) => span.end(),
};
