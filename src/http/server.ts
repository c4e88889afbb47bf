/**
 * The uWebSockets.js app: one catch-all handler that matches our route table, reads the body with the
 * route's cap, runs the handler, and reports every finished request (for the request log and metrics).
 * Also: production HTTPS enforcement, in-flight tracking and drain on shutdown.
 */
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { GatewayError } from '../errors.js';
import { BodyGate, bodyTooLarge, declaredLength, discardBoundFor } from './body-gate.js';
import { DrainState } from './drain-state.js';
import { IncomingRequest, type DataSource } from './request.js';
import { newRequestId } from './request-id.js';
import { Reply, WORKER_ID_HEADER, type AnswerBarrier } from './reply.js';
import { createRouteTable, type RouteMatch, type RoutePattern, type RouteTable } from './route-table.js';
import { listenExclusive, type Uws } from './uws.js';
import { registerWsRoutes, type WsRegistry, type WsRouteDef } from './ws.js';
import type { RequestTracer } from '../tracing/trace-port.js';

export interface RouteContext {
  readonly req: IncomingRequest;
  readonly reply: Reply;
  /** The matched route: guards read its family to pick the rate-limit counter. */
  readonly route: RouteDef;
  /** A graceful stop is under way (only routes with `servedWhileDraining` run then). */
  readonly draining: boolean;
}

/**
 * Who may call a route, declared in the route table (issue 12) so that a route cannot forget it: the server
 * runs a `key` route's authenticator after the route checks (draining, plain HTTP, method) and before the
 * handler, and hands its result to the handler. This layer knows the shape only: what a key, a scope or a
 * session is belongs to the authenticator the routes layer puts here (routes/guard.ts `keyed`).
 */
export type RouteAuth<A = unknown> =
  /** Anyone: probes, sign-in pages and their callbacks, static assets, test hooks. */
  | { readonly kind: 'public' }
  /** A signed-in dashboard session, with its CSRF token on writes: checked by the dashboard's route wrapper. */
  | { readonly kind: 'session' }
  /**
   * An API key holding `scope`. `authenticate` throws the refusal (401, 403, 429) or returns what the
   * handler receives; it returns a Promise only when admission is asynchronous (shared limits), so the
   * embedded default adds no microtask.
   */
  | { readonly kind: 'key'; readonly scope: string; authenticate(ctx: RouteContext): A | Promise<A> }
  /**
   * The handler authenticates itself, because it must act before the check or the check is not an API key
   * (`credential`); `why` says which. Kept few: tests list every one.
   */
  | { readonly kind: 'in-handler'; readonly credential: string; readonly why: string };

/**
 * `A` is what the route's authenticator yields (unknown for routes without one). `handle` is written as a
 * method, whose parameters TypeScript checks both ways, so that a `RouteDef<AuthenticatedKey>` sits in a
 * `RouteDef[]`: the pairing is sound because one helper builds `auth` and `handle` from the same `A`.
 */
export interface RouteDef<A = unknown> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly pattern: string;
  /** Route family for logs and metrics: `chat`, `models`, `management`, ... */
  readonly family: string;
  /** Request id prefix; `chatcmpl-` on chat routes so the body id and the header agree. */
  readonly idPrefix?: string;
  readonly bodyLimit?: number;
  /** Uploads forwarded as they arrive: the body is exposed as `req.bodyStream()`, never buffered whole. */
  readonly streamBody?: boolean;
  /** Ops routes (health, metrics) are served over plain HTTP even in production, for probes. */
  readonly plainHttpAllowed?: boolean;
  /**
   * Probes keep answering during a graceful stop (liveness 200, readiness 503 so a load balancer stops
   * sending); every other route answers 503 service_draining then.
   */
  readonly servedWhileDraining?: boolean;
  readonly auth: RouteAuth<A>;
  handle(ctx: RouteContext, auth: A): Promise<void> | void;
}

export interface CompletedRequest {
  readonly req: IncomingRequest;
  readonly family: string;
  readonly status: number;
  readonly durationMs: number;
  readonly aborted: boolean;
}

export interface HttpServerOptions {
  readonly uws: Uws;
  /**
   * The worker threads of `serve --workers N` (src/workers/): listen with SO_REUSEPORT, uWS's default, so
   * that each thread's listener takes its share of the one port's connections. Otherwise exclusive.
   */
  readonly sharedPort?: boolean;
  readonly routes: readonly RouteDef[];
  readonly maxBodyBytes: number;
  readonly production: boolean;
  readonly trustProxy: boolean;
  readonly tls?: { readonly cert_file: string; readonly key_file: string } | undefined;
  onStart?(family: string): void;
  onComplete(done: CompletedRequest): void;
  /**
   * An exception that is not a GatewayError (a bug), from a handler or from a uWS callback: reported once,
   * with the request it belongs to when there is one, before the 500 goes out. A throw that escaped a uWS
   * callback would otherwise end the process.
   */
  onUnexpectedError(err: unknown, where: string, req: IncomingRequest | null): void;
  /**
   * Names an exception a dependency raised (PostgreSQL unreachable: 503 store_unavailable), before it would
   * be reported as unexpected; logs it itself. Null: not one it knows.
   */
  nameDependencyError?(err: unknown, req: IncomingRequest): GatewayError | null;
  /** The access log wants every client's address: read it at once, while uWS still has it. */
  readonly logClientAddress?: boolean;
  /** WebSocket routes (src/http/ws.ts), registered before the catch-all HTTP handler. */
  readonly ws?: { readonly routes: readonly WsRouteDef[]; readonly maxPayloadBytes: number };
  /**
   * SPEC's `X-Service-Worker-ID`: which gateway process or `serve --workers` thread answered, sent on
   * every response. Absent: the header is not sent (the metrics listener, tests of this layer).
   */
  readonly workerId?: string;
  /** Starts each request's trace (src/tracing); absent or null with tracing off: one check per request. */
  readonly tracer?: RequestTracer | null;
  /** What every answer waits for before it leaves (the usage journal's held rows); absent: nothing. */
  readonly answerBarrier?: AnswerBarrier | null;
}

export interface HttpServer {
  listen(host: string, port: number): Promise<number>;
  readonly inFlight: number;
  /**
   * Stops accepting connections, waits up to `timeoutMs` for in-flight requests and for WebSocket sessions
   * finishing their work (execution agents' running invocations), then closes.
   */
  drain(timeoutMs: number): Promise<void>;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const UNMATCHED: RouteDef = { method: 'GET', pattern: '', family: 'unmatched', plainHttpAllowed: true, auth: { kind: 'public' }, handle: () => undefined };

const isThenable = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * The route's authenticator, then its handler: what the server runs once a request passed the route checks,
 * and what a synthetic request (a batch line) runs to go through the same steps. A synchronous
 * authenticator adds no await; after an asynchronous one, a client gone meanwhile gets no handler (its
 * answer could not be read, and nothing should reach a model for it).
 */
export function serveRoute(route: RouteDef, ctx: RouteContext): Promise<void> | void {
  const declared = route.auth;
  if (declared.kind !== 'key') return route.handle(ctx, undefined);
  const who = declared.authenticate(ctx);
  if (!isThenable(who)) return route.handle(ctx, who);
  return who.then((admitted) => (ctx.req.aborted ? undefined : route.handle(ctx, admitted)));
}

export function createHttpServer(opts: HttpServerOptions): HttpServer {
  return new UwsHttpServer(opts);
}

/**
 * One server's state (the app, its route table, the requests in flight, the drain) and the steps of a
 * request as methods: each runs once per request, as the closures it replaces did, and adds no allocation.
 */
class UwsHttpServer implements HttpServer {
  readonly #opts: HttpServerOptions;
  readonly #workerId: string | undefined;
  readonly #tracer: RequestTracer | null;
  readonly #table: RouteTable<RouteDef>;
  readonly #app: TemplatedApp;
  readonly #drain = new DrainState();
  readonly #sockets: WsRegistry | null;
  #listenSocket: us_listen_socket | null = null;
  #inFlight = 0;
  /** Set while a drain waits: called as requests finish, it ends the wait once nothing is left. */
  #drained: (() => void) | null = null;

  constructor(opts: HttpServerOptions) {
    this.#opts = opts;
    this.#workerId = opts.workerId;
    this.#tracer = opts.tracer ?? null;
    this.#table = buildRouteTable(opts.routes);
    this.#app = opts.tls ? opts.uws.SSLApp({ cert_file_name: opts.tls.cert_file, key_file_name: opts.tls.key_file }) : opts.uws.App();
    this.#sockets = opts.ws
      ? registerWsRoutes(this.#app, opts.uws.DISABLED, {
          routes: opts.ws.routes,
          maxPayloadBytes: opts.ws.maxPayloadBytes,
          trustProxy: opts.trustProxy,
          isDraining: () => this.#drain.draining,
          onComplete: opts.onComplete,
          onUnexpectedError: opts.onUnexpectedError,
          workerId: opts.workerId,
        })
      : null;
    this.#app.any(
      '/*',
      this.#guarded((res: UwsResponse, uwsReq: UwsRequest) => this.#accept(res, uwsReq), 'request', null),
    );
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      // Exclusive: uWS otherwise sets SO_REUSEPORT, and a second gateway started on the same port would
      // silently share it (each with its own limiter, both writing one store).
      const listened = (socket: us_listen_socket | false): void => {
        if (!socket) {
          reject(new Error(`cannot listen on ${host}:${port}: address in use or not available`));
          return;
        }
        this.#listenSocket = socket;
        resolve(this.#opts.uws.us_socket_local_port(socket));
      };
      if (this.#opts.sharedPort) this.#app.listen(host, port, listened);
      else listenExclusive(this.#opts.uws, this.#app, host, port, listened);
    });
  }

  drain(timeoutMs: number): Promise<void> {
    this.#drain.begin();
    // The listener stays open until the work in flight is done: a load balancer's probe then reads a
    // 503 from /readyz (and clients a 503 service_draining), not a refused connection.
    return this.#workDone(timeoutMs).then(() => this.#stopListening());
  }

  /** Resolves once no request is in flight and the sockets have drained, or at the deadline. */
  #workDone(timeoutMs: number): Promise<void> {
    const sockets = this.#sockets;
    // Realtime sessions are not requests: they get a last event and a 1001 close, not a wait. Agents
    // with invocations running keep their socket while those finish, alongside the requests' drain.
    let socketsDone = sockets === null;
    const barrier = this.#opts.answerBarrier ?? null;
    return new Promise<void>((whenSent) => {
      // Answers held for the usage journal's write (reply.ts AnswerBarrier) leave before the app closes.
      const resolve = (): void => (barrier === null ? whenSent() : barrier.after(whenSent));
      const timer = setTimeout(() => {
        // Streams still open get their last frame and end; the app closes once they have (or at once
        // for anything that registered no last words). Sockets still open are ended now.
        this.#drained = resolve;
        this.#drain.deadline();
        sockets?.closeAll();
        setImmediate(resolve);
      }, timeoutMs);
      const drained = (): void => {
        if (this.#inFlight > 0 || !socketsDone) return;
        clearTimeout(timer);
        resolve();
      };
      this.#drained = drained;
      void sockets?.drain().then(() => {
        socketsDone = true;
        this.#drained?.();
      });
      drained();
    });
  }

  #stopListening(): Promise<void> {
    if (this.#listenSocket) this.#opts.uws.us_listen_socket_close(this.#listenSocket);
    this.#listenSocket = null;
    return closeApp(this.#app);
  }

  #accept(res: UwsResponse, uwsReq: UwsRequest): void {
    const opts = this.#opts;
    const method = uwsReq.getCaseSensitiveMethod().toUpperCase();
    const path = uwsReq.getUrl();
    const match = this.#table.match(method, path);
    const route = match.kind === 'found' ? match.value : UNMATCHED;
    const req = new IncomingRequest(res, uwsReq, method, path, newRequestId(route.idPrefix ?? 'req_'), opts.trustProxy);
    const reply = new Reply(res, req.requestId, this.#drain, opts.answerBarrier ?? null);
    if (this.#workerId !== undefined) reply.setHeader(WORKER_ID_HEADER, this.#workerId);
    res.onAborted(
      this.#guarded(() => {
        reply.markAborted();
        req.markAborted();
      }, 'onAborted', req),
    );
    this.#inFlight += 1;
    opts.onStart?.(route.family);
    // Ended by the composition root's onComplete, with the access line's fields (a stream: when it ends).
    if (this.#tracer !== null) req.trace = this.#tracer.begin(req, match.kind === 'found' ? route : null);
    if (opts.logClientAddress) req.log.clientIp = req.clientIp;

    let early = this.#refusal(route, match, req);
    if (early === null && match.kind === 'found') req.params = match.params;
    if (BODY_METHODS.has(method) || route.streamBody) early = this.#readBody(res, req, reply, route, early);
    void this.#run(route, req, reply, early);
  }

  /** What answers the request before its route runs (draining, plain HTTP in production, 404, 405), or null. */
  #refusal(route: RouteDef, match: RouteMatch<RouteDef>, req: IncomingRequest): GatewayError | null {
    const opts = this.#opts;
    if (this.#drain.draining && !route.servedWhileDraining) return new GatewayError('service_draining', { headers: { Connection: 'close' } });
    if (opts.production && !opts.tls && !route.plainHttpAllowed && !viaHttpsProxy(req, opts.trustProxy)) {
      return new GatewayError('https_required', { message: 'This server accepts HTTPS only: plain HTTP requests are refused in production.' });
    }
    if (match.kind === 'not_found') return new GatewayError('not_found', { message: notFoundMessage(req.method, req.path) });
    if (match.kind === 'method_not_allowed') {
      return new GatewayError('method_not_allowed', {
        message: `${req.method} is not allowed on ${req.path}; allowed: ${match.allow.join(', ')}.`,
        headers: { Allow: match.allow.join(', ') },
      });
    }
    return null;
  }

  /**
   * Every body is read (or dropped) through a gate that holds an early answer until the body is in.
   * Returns the early answer, now also a 413 for a body announced over the route's cap.
   */
  #readBody(res: UwsResponse, req: IncomingRequest, reply: Reply, route: RouteDef, early: GatewayError | null): GatewayError | null {
    const limit = route.bodyLimit ?? this.#opts.maxBodyBytes;
    // With Transfer-Encoding the body is chunked whatever Content-Length says (RFC 9112 6.3): no known length.
    const declared = req.headers['transfer-encoding'] === undefined ? declaredLength(req.headers['content-length']) : Number.NaN;
    // A body announced over the cap is refused before anything runs (no authentication, no handler): the
    // 413 goes out at once, while the client has sent little of it (body-gate.ts).
    if (early === null && declared > limit) early = bodyTooLarge(limit);
    const gate = new BodyGate(true, discardBoundFor(limit), declared);
    reply.holdUntilBodyIn(gate);
    const onData: DataSource = (handler) => res.onData(this.#guarded(handler, 'onData', req));
    if (early !== null) req.dropBody(onData, gate);
    else if (route.streamBody) req.startBodyStream(res, onData, limit, () => reply.usable, gate);
    else req.startBody(onData, limit, gate);
    return early;
  }

  async #run(route: RouteDef, req: IncomingRequest, reply: Reply, early: GatewayError | null): Promise<void> {
    try {
      if (early) throw early;
      await serveRoute(route, { req, reply, route, draining: this.#drain.draining });
    } catch (thrown) {
      const err = thrown instanceof GatewayError ? thrown : (this.#opts.nameDependencyError?.(thrown, req) ?? thrown);
      if (!(err instanceof GatewayError)) this.#opts.onUnexpectedError(err, 'handler', req);
      req.log.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
      req.discardBody();
      if (!reply.headWritten) reply.error(err);
      else reply.endStream();
    } finally {
      if (reply.open && !reply.headWritten) reply.error(new GatewayError('internal_error'));
      this.#finish(req, reply, route.family);
    }
  }

  #finish(req: IncomingRequest, reply: Reply, family: string): void {
    this.#inFlight -= 1;
    this.#opts.onComplete({ req, family, status: reply.status, durationMs: performance.now() - req.startedAt, aborted: req.aborted });
    if (this.#drain.draining && this.#inFlight === 0) this.#drained?.();
  }

  /**
   * uWS callbacks must never throw: an exception escaping one ends the process (one client could stop the
   * service). Whatever escapes is reported and the request, if it can still be answered, gets a 500.
   */
  #guarded<A extends unknown[]>(f: (...args: A) => void, where: string, req: IncomingRequest | null): (...args: A) => void {
    return (...args: A) => {
      try {
        f(...args);
      } catch (err) {
        this.#opts.onUnexpectedError(err, where, req);
      }
    };
  }
}

/** The route table, once every route is seen to declare its authentication. */
function buildRouteTable(routes: readonly RouteDef[]): RouteTable<RouteDef> {
  // The type makes `auth` required; this catches a route built around it (a cast, plain JavaScript).
  for (const r of routes) {
    if (!r.auth) throw new Error(`route ${r.method} ${r.pattern} declares no authentication (RouteDef.auth)`);
  }
  return createRouteTable<RouteDef>(routes.map((r): RoutePattern<RouteDef> => ({ method: r.method, pattern: r.pattern, value: r })));
}

/** A 404 that says what the paths look like, and what is likely wrong with this one. */
export function notFoundMessage(method: string, path: string): string {
  const shape =
    'API paths look like /{project_id}/v1/chat/completions (the body names the model), /{project_id}/{endpoint_slug}/v1/chat/completions, ' +
    '/{project_id}/_semantic/router/v1/chat/completions or /{project_id}/v1/models; GET /{project_id}/v1/models lists the models.';
  const missingV1 = !path.split('/').includes('v1');
  return `No route matches ${method} ${path}${missingV1 ? ': the path has no /v1 segment' : ''}. ${shape}`;
}

function viaHttpsProxy(req: IncomingRequest, trustProxy: boolean): boolean {
  return trustProxy && req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https';
}

/** uWS.js 20.30 has `close()` on the app: it ends every open socket, keep-alive ones included. */
function closeApp(app: TemplatedApp): Promise<void> {
  (app as TemplatedApp & { close?: () => void }).close?.();
  return Promise.resolve();
}
