/**
 * The tracing port (src/tracing/README.md): what the seams of a request see of its trace. Types only, no
 * OpenTelemetry import: the HTTP server starts a request's trace, the routed turn and the upstream client
 * add child spans to it, the composition root ends it. A request without a trace (tracing off, or a
 * detached caller: a batch line, a background response, a playground turn) has `trace` null or absent, and no seam does
 * more than check that.
 *
 * Nothing here takes prompt or answer text: every attribute is an identifier, a count, a status or a code
 * (docs/decisions.md "Traces").
 */

/** What the request span is started from (the server's IncomingRequest and RouteDef have these). */
export interface TraceStart {
  readonly method: string;
  readonly path: string;
  readonly requestId: string;
  /** Header names lower-case: `traceparent` and `tracestate` continue the client's trace. */
  readonly headers: Readonly<Record<string, string>>;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
}

/** The route that matched: its pattern (`http.route`) and family, or none for an unmatched path. */
export interface TraceRoute {
  readonly pattern: string;
  readonly family: string;
}

/** The access line's fields of a finished request (src/http/request.ts RequestLog has them). */
export interface TraceEndLog {
  readonly project?: string | undefined;
  readonly endpoint?: string | undefined;
  readonly keyId?: string | undefined;
  readonly errorCode?: string | undefined;
  readonly promptTokens?: number | undefined;
  readonly completionTokens?: number | undefined;
}

/** A finished request, as the server reports it (CompletedRequest fits). */
export interface TraceEnd {
  readonly req: { readonly log: TraceEndLog };
  readonly status: number;
  readonly aborted: boolean;
}

/** Starts a request's trace; the HTTP server holds one only when tracing is on. */
export interface RequestTracer {
  begin(req: TraceStart, route: TraceRoute | null): RequestTrace;
}

/** One request's span and the child spans made under it. */
export interface RequestTrace {
  /** The routing decision, as a child span started now. */
  routing(): RoutingSpan;
  /** One upstream attempt (the first, or the retry on another server of the pool) as a child span. */
  attempt(target: AttemptTarget, attempt: number): AttemptSpan;
  /** Ends the request span with the access line's fields; `model` is the endpoint's public model id. */
  end(done: TraceEnd, model: string | undefined): void;
}

export interface RoutingSpan {
  /** The router's choice: the endpoint, its model and why it was chosen. */
  chose(endpoint: string, model: string, reason: string, workspaceId: string | null): void;
  /** Ends the span; `errorCode` when routing refused the turn. */
  end(errorCode?: string): void;
}

/** What an attempt names: the endpoint, the model sent upstream, the server it went to and the API path. */
export interface AttemptTarget {
  readonly projectId: string;
  readonly slug: string;
  readonly upstreamModel: string;
  /** The server's origin (scheme, host, port), never its credentials. */
  readonly origin: string;
  readonly path: string;
}

export interface AttemptSpan {
  /** The W3C `traceparent` naming this span: the upstream request carries it. */
  readonly traceparent: string;
  /** The client's `tracestate`, carried on unchanged; null when there is none. */
  readonly tracestate: string | null;
  /** The upstream answered with this status (headers in; a streamed body may still be coming). */
  answered(status: number): void;
  /** The attempt failed before an answer: `errorType` is its class (aborted, unreachable, an error code). Ends the span. */
  failed(errorType: string): void;
  /** Ends the span: once the answer was read whole, or its stream closed, or at the failure. */
  end(): void;
}
