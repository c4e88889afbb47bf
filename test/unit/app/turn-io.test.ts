/**
 * src/app declares what its use cases need of a request, a reply and a WebSocket (turn-io.ts,
 * realtime/realtime-socket.ts) instead of importing src/http (test/unit/layering.test.ts). The server's own
 * objects must keep satisfying those declarations structurally, or a route could no longer hand them over
 * unwrapped: these are compile-time checks (tsconfig.test.json), run as tests so the contract is written down.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { RealtimeSession, RealtimeSocket } from '../../../src/app/realtime/realtime-socket.js';
import type { ByteExchange, ByteSink, TurnCaller, TurnExchange, TurnLog, TurnSink } from '../../../src/app/turn-io.js';
import type { IncomingRequest, RequestLog } from '../../../src/http/request.js';
import type { Reply } from '../../../src/http/reply.js';
import type { RouteContext } from '../../../src/http/server.js';
import type { WsSession, WsSocket } from '../../../src/http/ws.js';

describe('src/app turn I/O contracts (met by src/http without wrappers)', () => {
  it('takes the server request as a TurnCaller and its access log as a TurnLog', () => {
    expectTypeOf<IncomingRequest>().toExtend<TurnCaller>();
    expectTypeOf<RequestLog>().toExtend<TurnLog>();
  });

  it('takes the server reply as a TurnSink and a ByteSink', () => {
    expectTypeOf<Reply>().toExtend<TurnSink>();
    expectTypeOf<Reply>().toExtend<ByteSink>();
  });

  it('takes a route context as the exchange a use case answers through', () => {
    expectTypeOf<RouteContext>().toExtend<TurnExchange>();
    expectTypeOf<RouteContext>().toExtend<ByteExchange>();
  });

  it('takes the WebSocket facade as a RealtimeSocket, and a realtime session as a WsSession', () => {
    expectTypeOf<WsSocket>().toExtend<RealtimeSocket>();
    expectTypeOf<RealtimeSession>().toExtend<WsSession>();
  });
});
