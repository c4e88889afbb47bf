/**
 * The OpenAI-compatible upstream client. A call names an endpoint; the endpoint is a pool of servers of
 * one model (upstream-pool.ts): each request goes to the server with the fewest outstanding requests per
 * unit of weight, servers that keep failing are taken out until a probe brings them back, and a request
 * that failed while its connection was being opened (so before any byte of it was sent: no model saw it)
 * is sent once more to another server of the pool. Nothing is retried once it may have reached a model:
 * SPEC's one request, one model turn. Each failure becomes one operator log line naming the endpoint, the
 * server and the cause, and the client error of upstream-errors.ts.
 *
 * One undici Pool per origin, shared by every endpoint that names it (keep-alive), `pool.request` or our
 * own dispatch handler rather than fetch (no WHATWG streams on the hot path: see BASELINE.md). Bodies are
 * the exact bytes prepared by the route. The caller's abort aborts the upstream request at once.
 */
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { GatewayError } from '../errors.js';
import type { Dispatcher } from 'undici';
import type { BufferedResponse } from './buffering-handler.js';
import { probeModels } from './models-probe.js';
import { isServerFailureStatus } from './server-health.js';
import { causeOf, noServerAvailable, sentNothing, transportFailure, unreachableUpstream } from './upstream-errors.js';
import type { AnswerStream } from './answer-stream.js';
import { EXCHANGE, POST, STREAM, type Answer, type ExchangeCall, type Sender } from './upstream-senders.js';
import { EndpointPool, resolveServers, type PoolDeps, type PoolReport, type PoolServer, type UpstreamEndpoint } from './upstream-pool.js';
import type { AttemptSpan, AttemptTarget, RequestTrace } from '../tracing/trace-port.js';

export type { BufferedResponse } from './buffering-handler.js';
export type { UpstreamEndpoint } from './upstream-pool.js';

/** What a call names: an endpoint, whose pool of servers the client chooses from. */
export type UpstreamTarget = UpstreamEndpoint;

export interface UpstreamCall {
  readonly path: string;
  /** Exact bytes, or a stream (multipart uploads forwarded as they arrive; never retried: it is spent). */
  readonly body: Buffer | Readable;
  /** Default application/json. */
  readonly contentType?: string;
  readonly signal: AbortSignal | UpstreamAbort;
  readonly accept?: string | undefined;
  /** undici idle timeouts; our own deadline timers are the ones that produce client-visible errors. */
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  /** Put on the operator's log line of a failure, to find the request's own line. */
  readonly requestId?: string | undefined;
  /**
   * The client request's trace when tracing is on: each attempt is a child span, and the upstream request
   * carries that span's `traceparent` (docs/decisions.md "Traces"). Null or absent: no span, no header.
   */
  readonly trace?: RequestTrace | null | undefined;
}

export type UpstreamResponse = Dispatcher.ResponseData;

/**
 * An abort trigger undici accepts in place of an AbortSignal: it calls `once('abort', fn)` and later
 * `removeListener('abort', fn)` on anything without `addEventListener`. One per turn. Not an
 * EventEmitter: its listener table is a dictionary-mode object made at construction and again whenever
 * the last listener goes, ~400 bytes a turn for one event that fires at most once.
 */
export class UpstreamAbort {
  aborted = false;
  /**
   * The server the call went to last (its base URL, no credentials) and how many times it was sent once
   * more to another: read by the turn for its ledger row (the dashboard's Requests page). Two field
   * writes a call, no allocation.
   */
  server: string | null = null;
  retries = 0;
  #listeners: (() => void)[] | null = null;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners;
    this.#listeners = null;
    listeners?.forEach((listener) => listener());
  }

  /** The only event is 'abort', and it fires once: `on` and `once` are the same. */
  once(_event: 'abort', listener: () => void): this {
    (this.#listeners ??= []).push(listener);
    return this;
  }

  on(event: 'abort', listener: () => void): this {
    return this.once(event, listener);
  }

  removeListener(_event: 'abort', listener: () => void): this {
    const at = this.#listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.#listeners?.splice(at, 1);
    return this;
  }
}

export interface UpstreamClient {
  post(target: UpstreamTarget, call: UpstreamCall): Promise<UpstreamResponse>;
  /**
   * The same request with the response read whole. Dispatched with a handler of our own rather than
   * `pool.request`: no Readable body stream, no body-mixin promise (bench/RESULTS.md).
   */
  exchange(target: UpstreamTarget, call: ExchangeCall): Promise<BufferedResponse>;
  /** A streamed chat answer read by a handler of our own, handed to its one reader with no Readable (answer-stream.ts). */
  stream(target: UpstreamTarget, call: ExchangeCall): Promise<AnswerStream>;
  /**
   * The key resolved at config load for the endpoint's first server, for a caller that connects by
   * itself (the realtime relay's WebSocket, to the URL derived from `upstream.base_url`).
   */
  apiKey(endpoint: UpstreamEndpoint): string | null;
  /** Whether some server of the endpoint takes requests now; true for an endpoint the client has not seen. */
  healthy(endpointId: string): boolean;
  /** Every endpoint pool's state (/readyz), or one project's. */
  report(projectId?: string): PoolReport[];
  close(): Promise<void>;
}

/** The part of the gateway's logger (pino) the client writes to. */
export interface UpstreamLogger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

export interface UpstreamClientOptions {
  /** The config's projects: every endpoint's pool is built, and its keys read from `env`, now. */
  readonly projects?: readonly { readonly id: string; readonly endpoints: readonly Omit<UpstreamEndpoint, 'projectId'>[] }[];
  readonly env?: NodeJS.ProcessEnv;
  /** Unix ms; the gateway's clock, so a test can move cooldowns along. */
  readonly now?: () => number;
  readonly logger?: UpstreamLogger;
  readonly probeTimeoutMs?: number;
  /** Each upstream failure, by a bounded class of cause (for a metric; the log line has the detail). */
  onUpstreamError?(endpoint: { readonly projectId: string; readonly slug: string }, cause: UpstreamErrorClass): void;
}

/**
 * What failed, in a few words a metric label can hold: the server could not be reached (nothing was sent),
 * failed after the request was sent, no server of the pool was taking requests, or answered with an error
 * status (refused: 401/403/404, the gateway's own configuration; overloaded: 429/503; else a 4xx or 5xx).
 */
export type UpstreamErrorClass = 'unreachable' | 'failed_after_send' | 'no_server' | 'refused' | 'overloaded' | 'http_4xx' | 'http_5xx';

function statusClass(status: number): UpstreamErrorClass {
  if (status === 401 || status === 403 || status === 404) return 'refused';
  if (status === 429 || status === 503) return 'overloaded';
  return status >= 500 ? 'http_5xx' : 'http_4xx';
}

/**
 * How long an idle connection to a model server is kept for reuse: shorter than the servers' own idle
 * close, which most send no Keep-Alive hint for (Node and uvicorn, vLLM's server: 5 s; uWS, the simulator:
 * 10 to 14 s). At 30 s, a turn that came as the server closed a connection idle that long was written to
 * the closing socket and failed 500 "closed before it answered", not retried since it had been sent (the
 * flaky "edits a routing rule" browser test: its routed turn came ~10 s after the previous turns).
 */
export const UPSTREAM_KEEP_ALIVE_MS = 4_000;

const SILENT: UpstreamLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export function createUpstreamClient(options: UpstreamClientOptions = {}): UpstreamClient {
  return new PooledUpstreamClient(options);
}

/**
 * The client over its endpoint pools (one per configured endpoint, built at start) and its undici pools
 * (one per origin, shared by every endpoint on that server). The public members are arrow properties:
 * callers may hold `post` or `exchange` apart from the client, as they could the object this replaced.
 */
class PooledUpstreamClient implements UpstreamClient {
  readonly #options: UpstreamClientOptions;
  readonly #env: NodeJS.ProcessEnv;
  readonly #log: UpstreamLogger;
  readonly #origins = new Map<string, Pool>();
  readonly #pools = new Map<string, EndpointPool>();
  readonly #deps: PoolDeps;

  constructor(options: UpstreamClientOptions) {
    this.#options = options;
    this.#env = options.env ?? process.env;
    this.#log = options.logger ?? SILENT;
    this.#deps = this.#poolDeps(options.now ?? Date.now, options.probeTimeoutMs ?? 2000);
    for (const project of options.projects ?? []) {
      for (const e of project.endpoints) this.#pools.set(e.id, this.#poolOf({ ...e, projectId: project.id }));
    }
  }

  readonly post = (endpoint: UpstreamTarget, call: UpstreamCall): Promise<UpstreamResponse> => this.#dispatch(endpoint, call, POST);
  readonly exchange = (endpoint: UpstreamTarget, call: ExchangeCall): Promise<BufferedResponse> => this.#dispatch(endpoint, call, EXCHANGE);
  readonly stream = (endpoint: UpstreamTarget, call: ExchangeCall): Promise<AnswerStream> => this.#dispatch(endpoint, call, STREAM);
  readonly apiKey = (endpoint: UpstreamEndpoint): string | null => this.#poolFor(endpoint).servers[0]?.apiKey ?? null;
  readonly healthy = (endpointId: string): boolean => this.#pools.get(endpointId)?.healthy ?? true;
  readonly report = (projectId?: string): PoolReport[] =>
    [...this.#pools.values()].filter((p) => projectId === undefined || p.endpoint.projectId === projectId).map((p) => p.report());
  readonly close = async (): Promise<void> => {
    await Promise.all([...this.#origins.values()].map((o) => o.close()));
  };

  #originPool(origin: string): Pool {
    let pool = this.#origins.get(origin);
    if (!pool) {
      pool = new Pool(origin, { connections: 256, pipelining: 1, keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS });
      this.#origins.set(origin, pool);
    }
    return pool;
  }

  /** What the endpoint pools ask of the client: the clock, a probe of a server, and a log line per change. */
  #poolDeps(now: () => number, probeTimeoutMs: number): PoolDeps {
    const log = this.#log;
    return {
      now,
      probe: async (server) => {
        const result = await probeModels(this.#originPool(server.origin), server, probeTimeoutMs);
        if (result.status !== null) return isServerFailureStatus(result.status) ? `HTTP ${result.status} from ${server.url}/models` : null;
        return result.ok ? null : causeOf(result.error, server.origin);
      },
      onChange(pool, server, change) {
        const fields = { ...where(pool, server), cause: server.health.lastFailure, consecutive_failures: server.health.failures };
        if (change === 'back') log.info(fields, 'upstream server back in its pool: its probe answered');
        else if (change === 'taken_out') log.warn({ ...fields, retry_in_ms: (server.health.retryAt ?? now()) - now() }, 'upstream server taken out of its pool after repeated failures');
        else log.warn({ ...fields, retry_in_ms: (server.health.retryAt ?? now()) - now() }, 'upstream server still down: its probe failed');
      },
    };
  }

  #poolOf(endpoint: UpstreamEndpoint): EndpointPool {
    const { servers, policy } = resolveServers(endpoint.upstream, this.#env);
    const pool = new EndpointPool({ id: endpoint.id, slug: endpoint.slug, projectId: endpoint.projectId }, servers, policy, this.#deps);
    for (const s of pool.servers) {
      if (s.missingKeyEnv) this.#log.warn({ ...where(pool, s), api_key_env: s.missingKeyEnv }, 'upstream api_key_env is not set: requests to this server go without an API key');
    }
    return pool;
  }

  /** Endpoints not in the config the client was built with (a test, a bench) get their pool on first use. */
  #poolFor(endpoint: UpstreamEndpoint): EndpointPool {
    let pool = this.#pools.get(endpoint.id);
    if (!pool) this.#pools.set(endpoint.id, (pool = this.#poolOf(endpoint)));
    return pool;
  }

  /** The answer arrived: the server's health and outstanding count, and the log line of an error status. */
  #answered<T extends Answer, C extends UpstreamCall>(pool: EndpointPool, server: PoolServer, call: C, sender: Sender<T, C>, res: T, span: AttemptSpan | null): T {
    sender.hold(res, pool, server);
    const status = res.statusCode;
    if (span !== null) {
      span.answered(status);
      sender.settle(res, span);
    }
    if (status < 400) {
      server.health.succeeded();
      return res;
    }
    const cause = `HTTP ${status} from ${server.url}${call.path}`;
    pool.answered(server, status, cause);
    this.#options.onUpstreamError?.(pool.endpoint, statusClass(status));
    if (status >= 500 || status === 401 || status === 403 || status === 404 || status === 408 || status === 429) {
      const fields = { ...where(pool, server), cause, request_id: call.requestId };
      if (status === 401 || status === 403 || status === 404) this.#log.error(fields, 'upstream refused the request: check the endpoint upstream config');
      else this.#log.warn(fields, 'upstream answered with an error');
    }
    return res;
  }

  /**
   * A send failed: its log line, and what to do. `next` is the server to send to once more, when nothing
   * was sent and another server of the pool can take the request (`mayRetry`: first attempts only);
   * otherwise `error` is thrown: an abort (the deadline, or the client gone) as it is, for the caller to
   * name, anything else as the client's error.
   */
  #failed(pool: EndpointPool, server: PoolServer, call: UpstreamCall, err: unknown, mayRetry: boolean): { error: unknown; next: PoolServer | null } {
    pool.release(server);
    if (call.signal.aborted) return { error: err, next: null };
    // The server answered, but the gateway refused the answer (one past the answer cap, answer-cap.ts): not
    // a transport failure, so the server stays in the pool and the client gets that error, not "unreachable".
    if (err instanceof GatewayError) {
      this.#log.warn({ ...where(pool, server), request_id: call.requestId, reason: err.message }, 'upstream answer refused');
      return { error: err, next: null };
    }
    const cause = causeOf(err, server.origin);
    const error = unreachableUpstream(transportFailure(err));
    pool.failed(server, cause);
    const fields = { ...where(pool, server), cause, request_id: call.requestId };
    this.#options.onUpstreamError?.(pool.endpoint, sentNothing(err) ? 'unreachable' : 'failed_after_send');
    if (!sentNothing(err)) {
      this.#log.error(fields, 'upstream request failed after it was sent; not retried');
      return { error, next: null };
    }
    // A spent stream body cannot be sent twice.
    const next = mayRetry && Buffer.isBuffer(call.body) ? pool.pick(server) : null;
    if (next) this.#log.warn({ ...fields, retried_on: next.url }, 'upstream server unreachable; retried on another server of the pool');
    else this.#log.error(mayRetry ? fields : { ...fields, retry: true }, 'upstream server unreachable');
    return { error, next };
  }

  /** Picks a server (waiting for a running probe when none is in) and sends; one that sent nothing is sent once more. */
  async #dispatch<T extends Answer, C extends UpstreamCall>(endpoint: UpstreamEndpoint, call: C, sender: Sender<T, C>): Promise<T> {
    const pool = this.#poolFor(endpoint);
    const first = pool.pick(null) ?? (await this.#afterProbe(pool, call));
    // The ledger's record of where the call went (the Requests page): two field writes, no allocation.
    const noted = call.signal instanceof UpstreamAbort ? call.signal : null;
    if (noted) noted.server = first.url;
    // Tracing off: `trace` is null or absent, and no span is made.
    const trace = call.trace;
    let span = trace ? trace.attempt(attemptTarget(endpoint, first, call), 1) : null;
    let res: T;
    try {
      res = await sender.send(this.#originPool(first.origin), first, call, span);
    } catch (err) {
      span?.failed(attemptErrorType(call, err));
      const { error, next } = this.#failed(pool, first, call, err, true);
      if (next === null) throw error;
      if (noted) {
        noted.server = next.url;
        noted.retries += 1;
      }
      span = trace ? trace.attempt(attemptTarget(endpoint, next, call), 2) : null;
      try {
        res = await sender.send(this.#originPool(next.origin), next, call, span);
      } catch (again) {
        span?.failed(attemptErrorType(call, again));
        throw this.#failed(pool, next, call, again, false).error;
      }
      return this.#answered(pool, next, call, sender, res, span);
    }
    return this.#answered(pool, first, call, sender, res, span);
  }

  async #afterProbe(pool: EndpointPool, call: UpstreamCall): Promise<PoolServer> {
    const probing = pool.probeSettled();
    if (probing) await probing;
    const server = probing ? pool.pick(null) : null;
    if (server) return server;
    this.#log.error({ ...where(pool, null), causes: pool.servers.map((s) => `${s.url}: ${s.health.lastFailure ?? 'none'}`), request_id: call.requestId }, 'no upstream server of the endpoint is taking requests');
    this.#options.onUpstreamError?.(pool.endpoint, 'no_server');
    throw noServerAvailable(pool.servers.length);
  }
}

/** What an attempt's span names: the endpoint, the model sent upstream, the server's origin and the path. */
function attemptTarget(endpoint: UpstreamEndpoint, server: PoolServer, call: UpstreamCall): AttemptTarget {
  return { projectId: endpoint.projectId, slug: endpoint.slug, upstreamModel: endpoint.upstream.model, origin: server.origin, path: call.path };
}

/** A failed attempt's `error.type`: the abort (deadline or client), the refusal's code, or the transport's class. */
function attemptErrorType(call: UpstreamCall, err: unknown): string {
  if (call.signal.aborted) return 'aborted';
  if (err instanceof GatewayError) return err.code;
  return sentNothing(err) ? 'unreachable' : 'failed_after_send';
}

function where(pool: EndpointPool, server: PoolServer | null): Record<string, string> {
  const fields: Record<string, string> = { project: pool.endpoint.projectId, endpoint: pool.endpoint.slug, endpoint_id: pool.endpoint.id };
  if (server) fields.server = server.url;
  return fields;
}
