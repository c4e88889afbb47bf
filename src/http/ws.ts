/**
 * WebSocket routes on the uWS app. The upgrade request goes through the same IncomingRequest / Reply pair
 * as every HTTP request, so authentication failures are ordinary HTTP errors in the SPEC envelope (401, 403,
 * 404, 400) and never a half-open socket. After the upgrade, a route's session sees a small socket facade
 * that enforces one rule uWS leaves to us: a client that does not read cannot make the gateway buffer
 * without bound. Past the per-connection cap the connection is ended with close code 1008 (after one last
 * `error` event, queued behind what the client has not read yet).
 *
 * Incoming messages over the cap (`maxPayloadBytes`) are closed with 1009 here, not by uWS: uWS's own
 * limit (maxPayloadLength) drops the TCP connection without a close frame, which clients see as 1006. So
 * uWS is given a ceiling of 16 times the cap (64 MiB for the default 4 MiB), and a message between the two
 * is read, then refused with 1009; only a frame past the ceiling is still dropped by uWS, from its header,
 * before any of it is buffered. Memory per connection stays bounded by the ceiling (uWS buffers a message
 * whole before handing it over). Twice the cap left a 10 MiB realtime message or a 16 MiB agent frame
 * closing 1006 (issue 31).
 *
 * Text frames that are not valid UTF-8 cannot get RFC 6455's 1007: uWS validates text itself and drops the
 * connection ("Received invalid UTF-8", 1006) before any callback of ours runs, with no option to turn the
 * check off (docs/decisions.md "Hostile bodies").
 */
import type { CompressOptions, HttpRequest, HttpResponse, TemplatedApp, WebSocket, WebSocketBehavior, us_socket_context_t } from 'uWebSockets.js';
import { GatewayError } from '../errors.js';
import { IncomingRequest } from './request.js';
import { newRequestId } from './request-id.js';
import { Reply, WORKER_ID_HEADER } from './reply.js';
import { createRouteTable, type RouteTable } from './route-table.js';
import type { CompletedRequest, RouteContext, RouteDef } from './server.js';

export interface WsSocket {
  /** Queues a text frame. false when the socket is closed, or was just closed for exceeding its cap. */
  send(text: string): boolean;
  /** Queues past the cap: only for the last error event before closing (a realtime session's). */
  sendAnyway(text: string): void;
  readonly bufferedAmount: number;
  readonly open: boolean;
  /** Graceful close with a close frame (code and a reason of at most 123 bytes). */
  end(code: number, reason: string): void;
}

export interface WsSession {
  message(data: Buffer, isBinary: boolean): void;
  /** uWS drained some of what was buffered for the client. */
  drain?(): void;
  /** The socket is gone (either side, any reason); release everything. */
  closed(code: number, reason: string): void;
  /** The server is shutting down: send a last event if there is one; the socket is ended right after. */
  shutdown?(): void;
  /**
   * A graceful stop began and the session has work under way to finish first (an execution agent's
   * running invocations): a promise that settles once it has; the socket stays open until then, or
   * until the drain deadline. Null (or absent): the socket is shut down at once.
   */
  drainFirst?(): Promise<void> | null;
  /** The client sent more than its cap allows to wait; called before the socket is ended with 1008. */
  overflow?(buffered: number): void;
  /**
   * The client sent a message over the cap (never delivered): called before the socket is ended with 1009,
   * or, with null, before `closed` when uWS dropped the connection on a frame past its own ceiling.
   */
  tooLarge?(bytes: number | null): void;
}

export interface WsAccept {
  /** The subprotocol to echo (one the client offered), or null for none. */
  readonly protocol: string | null;
  /** Bytes that may wait for a slow client before the connection is dropped. */
  readonly maxBufferedBytes: number;
  open(socket: WsSocket): WsSession;
}

export interface WsRouteDef {
  readonly pattern: string;
  readonly family: string;
  /**
   * Called in the upgrade handler; throw a GatewayError (or reject with one) to refuse with an HTTP error.
   * A Promise only when a step is asynchronous (a shared admission): the upgrade then waits for it.
   */
  upgrade(ctx: RouteContext): WsAccept | Promise<WsAccept>;
}

export interface WsOptions {
  readonly routes: readonly WsRouteDef[];
  /** Largest incoming message; a larger one closes the connection with 1009 (see the header comment). */
  readonly maxPayloadBytes: number;
  readonly trustProxy: boolean;
  readonly isDraining: () => boolean;
  onComplete(done: CompletedRequest): void;
  /** An exception that is not a GatewayError (a bug) caught at a uWS callback: see HttpServerOptions. */
  onUnexpectedError(err: unknown, where: string, req: IncomingRequest | null): void;
  /** X-Service-Worker-ID on the 101 and on refusals, as on every HTTP response (server.ts). */
  readonly workerId?: string | undefined;
}

export interface WsRegistry {
  readonly openCount: number;
  /**
   * A graceful stop: every socket is ended (1001, after its session's goodbye) at once, or, for a session
   * with work to finish (`drainFirst`), once that is done. Resolves when every socket so drained is ended.
   */
  drain(): Promise<void>;
  /** Ends every open socket (1001), after letting each session say goodbye. */
  closeAll(): void;
}

const WS_UPGRADE_AUTH = { kind: 'in-handler', credential: 'the WebSocket route\'s own', why: 'WsRouteDef.upgrade checks it before the upgrade' } as const;

interface UserData {
  accept: WsAccept;
  session: WsSession | null;
  facade: SocketFacade | null;
}

/** uWS backstop far above any per-connection cap: our own check fires first. */
const UWS_MAX_BACKPRESSURE = 64 * 1024 * 1024;
/** uWS's own message limit, as a multiple of ours: the messages between the two get a proper 1009. */
const UWS_PAYLOAD_CEILING_FACTOR = 16;
/** maxPayloadLength is an unsigned 32-bit int in uWS; stay well inside it. */
const UWS_PAYLOAD_CEILING_MAX = 2 ** 31 - 1;
/** The reason uWS gives `close` (code 1006) when it drops a connection on a frame past maxPayloadLength. */
const UWS_TOO_BIG_REASON = 'Received too big message';

class SocketFacade implements WsSocket {
  readonly #ws: WebSocket<UserData>;
  readonly #cap: number;
  #open = true;
  onOverflow: (buffered: number) => void = () => undefined;

  constructor(ws: WebSocket<UserData>, cap: number) {
    this.#ws = ws;
    this.#cap = cap;
  }

  get open(): boolean {
    return this.#open;
  }

  get bufferedAmount(): number {
    return this.#open ? this.#ws.getBufferedAmount() : 0;
  }

  send(text: string): boolean {
    if (!this.#open) return false;
    const buffered = this.#ws.getBufferedAmount();
    if (buffered > 0 && buffered + Buffer.byteLength(text) > this.#cap) {
      this.onOverflow(buffered);
      this.end(1008, `client too slow: ${buffered} bytes unread`);
      return false;
    }
    this.#ws.cork(() => this.#ws.send(text, false));
    return true;
  }

  /** Sends past the cap: only for the last error event before closing. */
  sendAnyway(text: string): void {
    if (this.#open) this.#ws.cork(() => this.#ws.send(text, false));
  }

  end(code: number, reason: string): void {
    if (!this.#open) return;
    this.#open = false;
    this.#ws.end(code, reason.slice(0, 123));
  }

  markClosed(): void {
    this.#open = false;
  }
}

export function registerWsRoutes(app: TemplatedApp, uwsCompression: CompressOptions, opts: WsOptions): WsRegistry {
  const open = new Set<WebSocket<UserData>>();
  for (const route of opts.routes) {
    const behavior = wsBehavior(route, uwsCompression, opts, open);
    const pattern = toUwsPattern(route.pattern);
    app.ws<UserData>(pattern, behavior);
    // Every HTTP route takes a trailing slash (route-table.ts); uWS's router does not, so without this the
    // upgrade on `/v1/realtime/` fell through to the plain-GET route and got 426. A `*` tail takes it already.
    if (!pattern.endsWith('*')) app.ws<UserData>(`${pattern}/`, behavior);
  }
  return createWsRegistry(open, opts);
}

/** A WebSocket route as mounted: its definition, the HTTP descriptor of its upgrade and the table matching its path. */
interface MountedWsRoute {
  readonly route: WsRouteDef;
  readonly def: RouteDef;
  readonly table: RouteTable<RouteDef>;
}

/** The uWS handlers of one route; `open` is the registry's set of open sockets. */
function wsBehavior(route: WsRouteDef, compression: CompressOptions, opts: WsOptions, open: Set<WebSocket<UserData>>): WebSocketBehavior<UserData> {
  // The upgrade callback authenticates (it must answer before the socket exists); the descriptor says so.
  const def: RouteDef = { method: 'GET', pattern: route.pattern, family: route.family, auth: WS_UPGRADE_AUTH, handle: () => undefined };
  const mounted: MountedWsRoute = { route, def, table: createRouteTable([{ method: 'GET', pattern: route.pattern, value: def }]) };
  return {
    compression,
    maxPayloadLength: Math.min(opts.maxPayloadBytes * UWS_PAYLOAD_CEILING_FACTOR, UWS_PAYLOAD_CEILING_MAX),
    maxBackpressure: UWS_MAX_BACKPRESSURE,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade: (res: HttpResponse, uwsReq: HttpRequest, context: us_socket_context_t) => upgradeSocket(mounted, opts, res, uwsReq, context),
    open: guarded(opts, 'open', (ws) => openSession(ws, open)),
    message: guarded(opts, 'message', (ws, message: ArrayBuffer, isBinary: boolean) => deliverMessage(ws, message, isBinary, opts.maxPayloadBytes)),
    drain: guarded(opts, 'drain', (ws) => ws.getUserData().session?.drain?.()),
    close: guarded(opts, 'close', (ws, code: number, message: ArrayBuffer) => closeSession(ws, code, message, open)),
  };
}

/**
 * An exception escaping a uWS callback ends the process: each is reported instead, and a session whose
 * handler failed is ended with 1011 (internal error) rather than left half-working.
 */
function guarded<A extends [WebSocket<UserData>, ...unknown[]]>(opts: WsOptions, where: string, f: (...args: A) => void): (...args: A) => void {
  return (...args: A): void => {
    try {
      f(...args);
    } catch (err) {
      opts.onUnexpectedError(err, `ws.${where}`, null);
      if (where !== 'close') args[0].getUserData().facade?.end(1011, 'internal error');
    }
  };
}

/**
 * The upgrade request, answered as an HTTP request is: the route's `upgrade` accepts it (101, now or once
 * its asynchronous step settles) or refuses it with an HTTP error.
 */
function upgradeSocket({ route, def, table }: MountedWsRoute, opts: WsOptions, res: HttpResponse, uwsReq: HttpRequest, context: us_socket_context_t): void {
  const path = uwsReq.getUrl();
  const key = uwsReq.getHeader('sec-websocket-key');
  const extensions = uwsReq.getHeader('sec-websocket-extensions');
  const req = new IncomingRequest(res, uwsReq, 'GET', path, newRequestId('req_'), opts.trustProxy);
  // Read now: after the upgrade the response object, and with it the peer address, is gone.
  void req.clientIp;
  const reply = new Reply(res, req.requestId);
  if (opts.workerId !== undefined) reply.setHeader(WORKER_ID_HEADER, opts.workerId);
  res.onAborted(() => {
    reply.markAborted();
    req.markAborted();
  });
  const match = table.match('GET', path);
  if (match.kind === 'found') req.params = match.params;
  const complete = (status: number): void => opts.onComplete({ req, family: route.family, status, durationMs: performance.now() - req.startedAt, aborted: req.aborted });
  const refuse = (err: unknown): void => {
    if (!(err instanceof GatewayError)) opts.onUnexpectedError(err, 'ws.upgrade', req);
    reply.error(err);
    complete(reply.status);
  };
  const upgrade = (accept: WsAccept): void => {
    // A client gone while an asynchronous step ran: its response may not be touched any more.
    if (req.aborted) return complete(reply.status);
    res.cork(() => {
      res.writeStatus('101 Switching Protocols');
      for (const [k, v] of reply.pendingHeaders) res.writeHeader(k, v);
      res.upgrade<UserData>({ accept, session: null, facade: null }, key, accept.protocol ?? '', extensions, context);
    });
    complete(101);
  };
  let accepted: WsAccept | Promise<WsAccept>;
  try {
    if (opts.isDraining()) throw new GatewayError('service_draining', { headers: { Connection: 'close' } });
    accepted = route.upgrade({ req, reply, route: def, draining: false });
    if (!(accepted instanceof Promise)) return upgrade(accepted);
  } catch (err) {
    return refuse(err);
  }
  accepted.then(upgrade, refuse).catch((err: unknown) => opts.onUnexpectedError(err, 'ws.upgrade', req));
}

function openSession(ws: WebSocket<UserData>, open: Set<WebSocket<UserData>>): void {
  const data = ws.getUserData();
  const facade = new SocketFacade(ws, data.accept.maxBufferedBytes);
  data.facade = facade;
  open.add(ws);
  const session = data.accept.open(facade);
  data.session = session;
  facade.onOverflow = (buffered) => {
    session.overflow?.(buffered);
  };
}

function deliverMessage(ws: WebSocket<UserData>, message: ArrayBuffer, isBinary: boolean, maxPayloadBytes: number): void {
  const data = ws.getUserData();
  if (message.byteLength > maxPayloadBytes) {
    // Never copied nor delivered: uWS frees its buffer when this returns.
    data.session?.tooLarge?.(message.byteLength);
    data.facade?.end(1009, `message of ${message.byteLength} bytes: the limit is ${maxPayloadBytes}`);
    return;
  }
  // The ArrayBuffer is neutered when this callback returns: copy it.
  data.session?.message(Buffer.from(message.slice(0)), isBinary);
}

function closeSession(ws: WebSocket<UserData>, code: number, message: ArrayBuffer, open: Set<WebSocket<UserData>>): void {
  open.delete(ws);
  const data = ws.getUserData();
  data.facade?.markClosed();
  const session = data.session;
  data.session = null;
  const reason = Buffer.from(message).toString('utf8');
  // The same refusal as deliverMessage's 1009, made by uWS from the frame header: not a client that left.
  if (code === 1006 && reason.startsWith(UWS_TOO_BIG_REASON)) session?.tooLarge?.(null);
  session?.closed(code, reason);
}

function shutDown(ws: WebSocket<UserData>): void {
  const data = ws.getUserData();
  data.session?.shutdown?.();
  data.facade?.end(1001, 'server shutting down');
}

function createWsRegistry(open: Set<WebSocket<UserData>>, opts: WsOptions): WsRegistry {
  return {
    get openCount() {
      return open.size;
    },
    drain() {
      const waits: Promise<void>[] = [];
      for (const ws of [...open]) {
        const work = ws.getUserData().session?.drainFirst?.() ?? null;
        if (work === null) shutDown(ws);
        else {
          const ended = work.then(() => {
            // Only if still open: the peer may have closed it meanwhile (uWS then invalidates `ws`).
            if (open.has(ws)) shutDown(ws);
          });
          // A failure is a bug, reported; the socket is then ended at the drain deadline (closeAll).
          waits.push(ended.catch((err: unknown) => opts.onUnexpectedError(err, 'ws.drain', null)));
        }
      }
      // One turn of the event loop before the caller closes the app: the close frames go out first, or
      // the app's close would cut the sockets (1006 at the peer) before uWS has written them.
      return Promise.all(waits).then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    },
    closeAll() {
      for (const ws of [...open]) shutDown(ws);
    },
  };
}

/** Our patterns (`/:project/:endpoint/v1/realtime`) are uWS patterns already, except a `*name` tail. */
function toUwsPattern(pattern: string): string {
  return pattern.replace(/\*\w+$/, '*');
}
