/**
 * What a realtime session sees of its WebSocket, and what the transport sees of the session: declared
 * here so src/app never imports src/http. src/http/ws.ts's socket facade and its WsSession contract match
 * these structurally (routes/realtime.ts hands one to the other).
 */

export interface RealtimeSocket {
  /** Queues a text frame. false when the socket is closed, or was just closed for exceeding its cap. */
  send(text: string): boolean;
  /** Queues past the per-connection cap: only for the last error event before closing. */
  sendAnyway(text: string): void;
  readonly bufferedAmount: number;
  readonly open: boolean;
  /** Graceful close with a close frame (code and a reason of at most 123 bytes). */
  end(code: number, reason: string): void;
}

export interface RealtimeSession {
  message(data: Buffer, isBinary: boolean): void;
  /** Some of what was buffered for the client went out. */
  drain?(): void;
  /** The socket is gone (either side, any reason); release everything. */
  closed(code: number, reason: string): void;
  /** The server is shutting down: send a last event if there is one; the socket is ended right after. */
  shutdown?(): void;
  /** The client sent more than its cap allows to wait; called before the socket is ended with 1008. */
  overflow?(buffered: number): void;
  /**
   * The client sent a message over the cap (never delivered): called before the socket is ended with 1009,
   * or, with null, before `closed` when the transport dropped the connection on a frame past its ceiling.
   */
  tooLarge?(bytes: number | null): void;
}
