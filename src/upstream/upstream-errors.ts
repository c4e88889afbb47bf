/**
 * Upstream failures mapped onto catalogue codes, in one place (like openai-node's APIError.generate), and
 * described for the operator. The client gets a SPEC code where one applies (context_length_exceeded,
 * invalid_request, timeout, capacity_exceeded on a 429); anything else is SPEC's 500 internal_error for
 * "a dispatch failure without an equivalent client code", with a message saying what failed (README
 * "Upstream pools, health and failures" has the table) but never the server's address or its internals:
 * those go to the operator's log line (`causeOf`), which names the server and the exact cause.
 */
import { GatewayError } from '../errors.js';
import { reportedError } from '../core/chat/reported-error.js';
import { retryStrategy, tooManyRequests } from '../core/limits/limit-headers.js';

type Json = Record<string, unknown>;

const CONTEXT_OVERFLOW = /maximum context length|context length|context window|too many tokens|prompt is too long/i;
const UNKNOWN_MODEL = /model_not_found|model .*(not found|does not exist)|no such model|unknown model/i;

interface UpstreamMessage {
  readonly message: string | null;
  readonly code: unknown;
  readonly param: unknown;
}

function messageOf(err: Json): UpstreamMessage {
  return { message: typeof err.message === 'string' ? err.message.slice(0, 500) : null, code: err.code, param: err.param };
}

function upstreamMessage(body: string): UpstreamMessage {
  try {
    const parsed = JSON.parse(body) as Json;
    return messageOf((parsed.error && typeof parsed.error === 'object' ? parsed.error : parsed) as Json);
  } catch {
    return { message: null, code: null, param: null };
  }
}

export function mapUpstreamError(status: number, body: string, retryAfter: string | null): GatewayError {
  return mapFailure(status, upstreamMessage(body), retryAfter, false);
}

/**
 * An error the model server reported inside an HTTP 200 answer (core/chat/reported-error.ts: a body, or a
 * frame mid-stream). A numeric code of 400-599 is the status the server would have answered with (vLLM's
 * `code: 400`) and is mapped as that status is (README "Upstream failures"); without one it is a server
 * failure, 500 internal_error. The server's message is kept even then: it is what the server chose to tell
 * its client about this request, and the only account of what went wrong.
 */
export function mapReportedError(err: Json): GatewayError {
  const reported = messageOf(err);
  const { code } = reported;
  const status = typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : 500;
  return mapFailure(status, reported, null, true);
}

/**
 * A chat completion answered with HTTP 200 that is no completion, as the error to answer instead (SPEC
 * principle 4: an error, not a substitute answer): the server's own error in the body, mapped as
 * mapReportedError maps it, or a body with no `choices` array at all; null for a completion.
 */
export function failedCompletion(json: unknown): GatewayError | null {
  const body = (json !== null && typeof json === 'object' && !Array.isArray(json) ? json : {}) as Json;
  if (Array.isArray(body.choices) && body.choices.length > 0) return null;
  const reported = reportedError(body);
  if (reported !== null) return mapReportedError(reported);
  if (Array.isArray(body.choices)) return null;
  return new GatewayError('internal_error', { message: 'The model server answered HTTP 200 with a body that is not a chat completion: it has no choices array.' });
}

function mapFailure(status: number, upstream: UpstreamMessage, retryAfter: string | null, reported: boolean): GatewayError {
  const { message, code, param } = upstream;
  if (code === 'context_length_exceeded' || (status === 400 && message && CONTEXT_OVERFLOW.test(message))) {
    return new GatewayError('context_length_exceeded', {
      param: 'max_tokens',
      message: `The model server reports that input plus requested output exceeds its context window${message ? `: ${message}` : '.'}`,
    });
  }
  if (status === 400 || status === 422) {
    return new GatewayError('invalid_request', {
      param: typeof param === 'string' ? param : null,
      message: `The model server rejected the request${message ? `: ${message}` : '.'}`,
    });
  }
  if (status === 429) {
    const seconds = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : 1;
    // SPEC Errors: every 429 carries retry_after, retry_strategy and Retry-After, built where the
    // gateway's own 429s are. An overloaded server frees up gradually, like a request window: back off.
    return tooManyRequests(
      'capacity_exceeded',
      `The model server is overloaded (HTTP 429 from upstream); retry after ${seconds} s.`,
      seconds,
      retryStrategy('requests', seconds),
    );
  }
  if (status === 408 || status === 504) return new GatewayError('timeout', { message: `The model server timed out (HTTP ${status} from upstream).` });
  // 401/403/404 from the model server are the gateway's own configuration: no retry fixes them.
  const lasting = status === 401 || status === 403 || status === 404;
  const text = reported && !lasting && message !== null ? `The model server reported an error${status === 500 ? '' : ` (code ${status})`}: ${message}` : failedMessage(status, code, message);
  return new GatewayError('internal_error', { message: text, ...(lasting ? { retryable: false } : {}) });
}

/** The 500s: what the operator must fix, or what passes by itself. */
function failedMessage(status: number, code: unknown, message: string | null): string {
  if (status === 401 || status === 403) {
    return `The model server refused the gateway's own credentials (HTTP ${status} from upstream): the operator must fix this endpoint's upstream API key. Your request and key are not at fault.`;
  }
  if (status === 404) {
    return code === 'model_not_found' || (message !== null && UNKNOWN_MODEL.test(message))
      ? "The model server does not serve this endpoint's configured model (HTTP 404 from upstream): the operator must fix the endpoint's upstream model."
      : "The model server has no such route (HTTP 404 from upstream): this endpoint's upstream base URL is misconfigured.";
  }
  if (status === 503) return 'The model server is overloaded or unavailable (HTTP 503 from upstream); retry later.';
  return `The model server failed (HTTP ${status} from upstream).`;
}

/** How a transport error happened, as far as the gateway can tell. */
export type TransportFailure = 'refused' | 'dns' | 'connect_timeout' | 'unreachable' | 'closed' | 'other';

interface ErrnoLike {
  readonly code?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly hostname?: unknown;
  readonly errors?: unknown;
}

const KIND_BY_CODE: Readonly<Record<string, TransportFailure>> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_FAIL: 'dns',
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
  ECONNRESET: 'closed',
  EPIPE: 'closed',
  UND_ERR_SOCKET: 'closed',
  UND_ERR_CLOSED: 'closed',
};

export function transportFailure(err: unknown): TransportFailure {
  const code = (err as ErrnoLike | null)?.code;
  return (typeof code === 'string' ? KIND_BY_CODE[code] : undefined) ?? 'other';
}

/**
 * Whether the error can only come from opening the connection (refused, name not resolved, connect timed
 * out): no socket existed, so no byte of the request left and no model saw it. Only these are retried on
 * another server. EHOSTUNREACH is not among them: it can also end a connection that was already sending.
 */
export function sentNothing(err: unknown): boolean {
  const kind = transportFailure(err);
  return kind === 'refused' || kind === 'dns' || kind === 'connect_timeout';
}

/** The operator's cause: `ECONNREFUSED 127.0.0.1:19102`, `ENOTFOUND models.internal`, `UND_ERR_SOCKET (other side closed)`. */
export function causeOf(err: unknown, host: string): string {
  const e = (err ?? {}) as ErrnoLike;
  const first = Array.isArray(e.errors) ? ((e.errors[0] ?? {}) as ErrnoLike) : e;
  const code = typeof e.code === 'string' ? e.code : (err as Error | null)?.name ?? 'Error';
  if (typeof first.address === 'string') return `${code} ${first.address}${typeof first.port === 'number' ? `:${first.port}` : ''}`;
  if (typeof e.hostname === 'string') return `${code} ${e.hostname}`;
  const message = (err as Error | null)?.message;
  return `${code} ${host}${message ? ` (${message.slice(0, 200)})` : ''}`;
}

/** The client's error for a server that could not be reached, or that dropped the connection. */
export function unreachableUpstream(kind: TransportFailure = 'other'): GatewayError {
  return new GatewayError('internal_error', { message: UNREACHABLE_MESSAGES[kind] });
}

const UNREACHABLE_MESSAGES: Readonly<Record<TransportFailure, string>> = {
  refused: 'The model server could not be reached (connection refused): it is down or its address is misconfigured.',
  dns: "The model server could not be reached (its host name does not resolve): this endpoint's upstream base URL is misconfigured or DNS is failing.",
  connect_timeout: 'The model server could not be reached (the connection timed out).',
  unreachable: 'The model server could not be reached (no route to its host).',
  closed: 'The connection to the model server closed before it answered; the request had been sent to it, so it was not retried.',
  other: 'The model server could not be reached.',
};

/** Every server of the endpoint is out after repeated failures (server-health.ts). */
export function noServerAvailable(servers: number): GatewayError {
  const which = servers === 1 ? 'its one server is' : `all ${servers} of its servers are`;
  return new GatewayError('internal_error', {
    message: `No model server of this endpoint is taking requests: ${which} out after failing repeatedly (unreachable or unavailable), until a health probe finds one back; retry later.`,
  });
}
