/**
 * The tracing port (trace-port.ts) on the OpenTelemetry SDK for Node: spans made by hand at our own seams
 * (no auto-instrumentation: it patches modules and costs on every request), handed to a
 * BatchSpanProcessor and exported as OTLP/HTTP JSON to the operator's collector. The provider is not
 * registered as the global one and no context manager is installed: a span's parent is passed along
 * explicitly (the request's trace object), so nothing runs in async hooks.
 *
 * Spans and attributes (docs/decisions.md "Traces"): a SERVER span per request, a child for the routing
 * decision, a CLIENT child per upstream attempt; GenAI attributes after OpenTelemetry's semantic
 * conventions. No attribute ever holds prompt or answer text.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import type { TracingConfig } from '../config/tracing.js';
import type { AttemptSpan, AttemptTarget, RequestTrace, RequestTracer, RoutingSpan, TraceEnd, TraceRoute, TraceStart } from './trace-port.js';

/**
 * The GenAI conventions are still "development" in OpenTelemetry: the package keeps them in its
 * `incubating` entry point and asks users to copy the names rather than import them (they may change).
 */
const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
const GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
/** The `service.instance.id` resource attribute (incubating too). */
const SERVICE_INSTANCE_ID = 'service.instance.id';

/** GenAI operation of a route family; families that are not a model turn have none. */
const OPERATION_OF_FAMILY: Readonly<Record<string, string>> = { chat: 'chat', router: 'chat', responses: 'chat', embeddings: 'embeddings' };
/** GenAI operation of an upstream path. */
const OPERATION_OF_PATH: Readonly<Record<string, string>> = { '/chat/completions': 'chat', '/responses': 'chat', '/embeddings': 'embeddings' };

export interface Tracing {
  readonly tracer: RequestTracer;
  /** Exports what is pending and stops the exporter (at the gateway's close). */
  close(): Promise<void>;
}

export interface TracingMeta {
  readonly version: string;
  /** This process's (or worker thread's) instance id, as `X-Service-Worker-ID` gives it. */
  readonly instanceId: string;
  /** The values of `headers_env`; a variable that is not set is the caller's configuration error. */
  readonly headers: Readonly<Record<string, string>>;
}

/** The tracer, or null when tracing is off: then the server holds none and no request gets a trace. */
export function createTracing(config: TracingConfig, meta: TracingMeta): Tracing | null {
  if (!config.enabled || config.otlp_endpoint === undefined) return null;
  const exporter = new OTLPTraceExporter({ url: config.otlp_endpoint, headers: { ...meta.headers } });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.service_name, [ATTR_SERVICE_VERSION]: meta.version, [SERVICE_INSTANCE_ID]: meta.instanceId }),
    // A client's traceparent decides for its own trace; new traces are kept at the configured ratio.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.export_delay_ms })],
  });
  const tracer = provider.getTracer('switchboard', meta.version);
  const propagator = new W3CTraceContextPropagator();
  return {
    tracer: {
      begin: (req, route) => new SpanTrace(tracer, serverSpan(tracer, propagator, req, route), route?.family ?? 'unmatched'),
    },
    close: () => provider.shutdown(),
  };
}

function serverSpan(tracer: Tracer, propagator: W3CTraceContextPropagator, req: TraceStart, route: TraceRoute | null): Span {
  // Without a traceparent there is nothing to continue: skip the propagator's parse.
  const parent: Context = req.headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
  const attributes: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: req.method,
    [ATTR_URL_PATH]: req.path,
    'switchboard.request_id': req.requestId,
  };
  if (route) {
    attributes[ATTR_HTTP_ROUTE] = route.pattern;
    attributes['switchboard.route_family'] = route.family;
  }
  const name = route ? `${req.method} ${route.pattern}` : req.method;
  return tracer.startSpan(name, { kind: SpanKind.SERVER, attributes, startTime: req.startedAt }, parent);
}

/** One request's span; its children are made under it with an explicit parent context. */
class SpanTrace implements RequestTrace {
  readonly #tracer: Tracer;
  readonly #span: Span;
  readonly #family: string;
  #context: Context | null = null;

  constructor(tracer: Tracer, span: Span, family: string) {
    this.#tracer = tracer;
    this.#span = span;
    this.#family = family;
  }

  #parent(): Context {
    return (this.#context ??= trace.setSpan(ROOT_CONTEXT, this.#span));
  }

  routing(): RoutingSpan {
    return new Routing(this.#tracer.startSpan('switchboard.route', { kind: SpanKind.INTERNAL }, this.#parent()));
  }

  attempt(target: AttemptTarget, attempt: number): AttemptSpan {
    const operation = OPERATION_OF_PATH[target.path];
    const url = new URL(target.origin);
    const attributes: Attributes = {
      [GEN_AI_REQUEST_MODEL]: target.upstreamModel,
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      [ATTR_URL_PATH]: target.path,
      'switchboard.project': target.projectId,
      'switchboard.endpoint': target.slug,
      'switchboard.attempt': attempt,
    };
    if (operation) attributes[GEN_AI_OPERATION_NAME] = operation;
    const name = operation ? `${operation} ${target.upstreamModel}` : `POST ${target.path}`;
    return new Attempt(this.#tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, this.#parent()));
  }

  end(done: TraceEnd, model: string | undefined): void {
    const span = this.#span;
    const log = done.req.log;
    const attributes: Attributes = { [ATTR_HTTP_RESPONSE_STATUS_CODE]: done.status };
    if (log.project !== undefined) attributes['switchboard.project'] = log.project;
    if (log.endpoint !== undefined) attributes['switchboard.endpoint'] = log.endpoint;
    if (log.keyId !== undefined) attributes['switchboard.key_id'] = log.keyId;
    if (log.errorCode !== undefined) attributes[ATTR_ERROR_TYPE] = log.errorCode;
    if (done.aborted) attributes['switchboard.client_aborted'] = true;
    const operation = OPERATION_OF_FAMILY[this.#family];
    if (operation !== undefined && model !== undefined) {
      attributes[GEN_AI_OPERATION_NAME] = operation;
      // The model the turn asked the gateway for and the one its answer names: the endpoint's model id.
      attributes[GEN_AI_REQUEST_MODEL] = model;
      attributes[GEN_AI_RESPONSE_MODEL] = model;
      if (log.promptTokens !== undefined) attributes[GEN_AI_USAGE_INPUT_TOKENS] = log.promptTokens;
      if (log.completionTokens !== undefined) attributes[GEN_AI_USAGE_OUTPUT_TOKENS] = log.completionTokens;
    }
    span.setAttributes(attributes);
    // HTTP conventions: a server span is an error for a 5xx only (a 4xx is the client's).
    if (done.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: log.errorCode ?? `HTTP ${done.status}` });
    span.end();
  }
}

class Routing implements RoutingSpan {
  readonly #span: Span;

  constructor(span: Span) {
    this.#span = span;
  }

  chose(endpoint: string, model: string, reason: string, workspaceId: string | null): void {
    const attributes: Attributes = { 'switchboard.routing.endpoint': endpoint, 'switchboard.routing.model': model, 'switchboard.routing.reason': reason };
    if (workspaceId !== null) attributes['switchboard.routing.workspace_id'] = workspaceId;
    this.#span.setAttributes(attributes);
  }

  end(errorCode?: string): void {
    if (errorCode !== undefined) {
      this.#span.setAttribute(ATTR_ERROR_TYPE, errorCode);
      this.#span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
    }
    this.#span.end();
  }
}

class Attempt implements AttemptSpan {
  readonly traceparent: string;
  readonly tracestate: string | null;
  readonly #span: Span;
  #ended = false;

  constructor(span: Span) {
    this.#span = span;
    const sc = span.spanContext();
    // W3C Trace Context: version 00, the trace, this span as the parent, and the sampled flag.
    this.traceparent = `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
    const state = sc.traceState?.serialize();
    this.tracestate = state ? state : null;
  }

  answered(status: number): void {
    this.#span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 400) {
      this.#span.setAttribute(ATTR_ERROR_TYPE, String(status));
      this.#span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
    }
  }

  failed(errorType: string): void {
    this.#span.setAttribute(ATTR_ERROR_TYPE, errorType);
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    this.end();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#span.end();
  }
}
