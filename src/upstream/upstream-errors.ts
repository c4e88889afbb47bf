/**
 * Upstream failures mapped onto catalogue codes, in one place (like openai-node's APIError.generate), and
 * described for the operator. The client gets a SPEC code where one applies (context_length_exceeded,
 * invalid_request, timeout, capacity_exceeded on a 429); anything else is SPEC's 500 internal_error for
 * "a dispatch failure without an equivalent client code", with a message saying what failed (README
 * "Upstream pools, health and failures" has the table) but never the server's address or its internals:
 * those go to the operator's log line (`causeOf`), which names the server and the exact cause.
 */
import { GatewayError } from '../errors.js';
import { retryStrategy, tooManyRequests } from '../core/limits/limit-headers.js';

import { reportedError } from '../core/chat/reported-error.js';

type Json = Record<string, unknown>;

/**
 * A context overflow in the wordings of the servers we front: OpenAI and vLLM ("maximum context length",
 * "longer than the maximum model length"), TGI ("`inputs` tokens + `max_new_tokens` must be <= 4096",
 * "`inputs` must have less than 4096 tokens"), llama.cpp ("exceeds the available context size"), SGLang
 * and others ("context length", "context window").
 */
const CONTEXT_OVERFLOW =
  /maximum context length|context length|context window|context size|too many tokens|prompt is too long|maximum model length|max_new_tokens`? must be <=|must have less than \d+ tokens/i;
const UNKNOWN_MODEL = /model_not_found|model .*(not found|does not exist)|no such model|unknown model/i;
/** The client reads the server's message, not its error page: bounded, on one line. */
const MESSAGE_LIMIT = 500;

interface UpstreamDetail {
  readonly message: string | null;
  readonly code: unknown;
  readonly param: unknown;
}

/**
 * The server's own message from the error shapes in use: OpenAI's `{error: {message, code, param}}`, TGI's
 * and Ollama's `{error: "..."}`, a top-level `message` (older vLLM), FastAPI's `{detail: "..."}` or
 * `{detail: [{msg, loc}]}`, and a plain-text body (an HTML error page gives its title at most).
 */
function upstreamDetail(body: string): UpstreamDetail {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { message: clean(textMessage(body)), code: null, param: null };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { message: null, code: null, param: null };
  return detailOf(parsed as Json);
}

/** The detail of a parsed error body, or of an error object reported inside a 200 (mapReportedError). */
function detailOf(top: Json): UpstreamDetail {
  const err = top.error && typeof top.error === 'object' ? (top.error as Json) : top;
  const message =
    typeof err.message === 'string' ? err.message
    : typeof top.error === 'string' ? top.error
    : detailMessage(top.detail);
  return { message: clean(message), code: err.code, param: err.param };
}

/** FastAPI: a string, or validation issues `{loc: ["body", "messages"], msg}` joined as `msg (body.messages)`. */
function detailMessage(detail: unknown): string | null {
  if (typeof detail === 'string') return detail;
  if (!Array.isArray(detail)) return null;
  const issues = detail.flatMap((d: unknown) => {
    if (typeof d !== 'object' || d === null) return [];
    const { msg, loc } = d as Json;
    if (typeof msg !== 'string') return [];
    return [Array.isArray(loc) && loc.length > 0 ? `${msg} (${loc.join('.')})` : msg];
  });
  return issues.length > 0 ? issues.join('; ') : null;
}

function textMessage(body: string): string | null {
  if (!/^\s*</.test(body)) return body;
  return /<title>([^<]*)<\/title>/i.exec(body)?.[1] ?? null;
}

/** No control characters or line breaks reach the client's message; at most MESSAGE_LIMIT characters. */
function clean(message: string | null): string | null {
  if (message === null) return null;
  const flat = message.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return flat.length === 0 ? null : flat.slice(0, MESSAGE_LIMIT);
}

/** The 4xx about the request itself: not the gateway's own configuration (401/403/404), a timeout (408) or a busy server (429). */
function requestsFault(status: number): boolean {
  return status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 404 && status !== 408 && status !== 429;
}

/** The retry hint headers of an upstream answer, as received. */
export interface RetryHint {
  readonly retryAfter: string | null;
  /** OpenAI's own, in milliseconds; the SDKs read it before Retry-After. */
  readonly retryAfterMs: string | null;
}

/** Longer than any server means to be waited for: a hint past it is a mistake, not a plan. */
const MAX_RETRY_AFTER_S = 86_400;

/**
 * The server's hint in whole seconds (rounded up, at least 1, at most a day), or null without one it
 * states: `retry-after-ms` first (as the SDKs read it), then Retry-After as delta-seconds or an HTTP-date
 * (RFC 9110 10.2.3), which counts from `nowMs`, the real clock the server's date is on.
 */
export function retryAfterSeconds(hint: RetryHint, nowMs: number): number | null {
  const ms =
    hint.retryAfterMs !== null && /^\s*\d+(\.\d+)?\s*$/.test(hint.retryAfterMs) ? Number(hint.retryAfterMs)
    : hint.retryAfter === null ? null
    : /^\s*\d+\s*$/.test(hint.retryAfter) ? Number(hint.retryAfter) * 1000
    : Date.parse(hint.retryAfter) - nowMs;
  if (ms === null || Number.isNaN(ms)) return null;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(ms / 1000)));
}

/** `retryAfter`: the server's hint in seconds (retryAfterSeconds), null when it gave none. */
export function mapUpstreamError(status: number, body: string, retryAfter: number | null): GatewayError {
  return mapFailure(status, upstreamDetail(body), retryAfter, false);
}

/**
 * An error the model server reported inside an HTTP 200 answer (core/chat/reported-error.ts: a body, or a
 * frame mid-stream). A numeric code of 400-599 is the status the server would have answered with (vLLM's
 * `code: 400`) and is mapped as that status is (README "Upstream failures"); without one it is a server
 * failure, 500 internal_error. The server's message is kept even then: it is what the server chose to tell
 * its client about this request, and the only account of what went wrong.
 */
export function mapReportedError(err: Json): GatewayError {
  const reported = detailOf(err);
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

function mapFailure(status: number, detail: UpstreamDetail, retryAfter: number | null, reported: boolean): GatewayError {
  const { message, code, param } = detail;
  // Any 4xx of the request's own (TGI answers an overflow 422, some servers 413), in any of the shapes.
  if (code === 'context_length_exceeded' || (requestsFault(status) && message !== null && CONTEXT_OVERFLOW.test(message))) {
    return new GatewayError('context_length_exceeded', {
      param: 'max_tokens',
      message: `The model server reports that input plus requested output exceeds its context window${message ? `: ${message}` : '.'}`,
    });
  }
  // README "Upstream failures": every other 4xx is the request's own (a 413 too large for this server, a
  // 409, a 415): the same request fails the same way, so it is not retryable, and the server says why.
  if (requestsFault(status)) {
    return new GatewayError('invalid_request', {
      param: typeof param === 'string' ? param : null,
      message: `The model server rejected the request${message ? `: ${message}` : '.'}`,
    });
  }
  if (status === 429) {
    const seconds = retryAfter ?? 1;
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
  if (lasting || retryAfter === null) {
    const text = reported && !lasting && message !== null ? `The model server reported an error${status === 500 ? '' : ` (code ${status})`}: ${message}` : failedMessage(status, code, message, null);
    return new GatewayError('internal_error', { message: text, ...(lasting ? { retryable: false } : {}) });
  }
  // A 5xx with a hint (a 503 of a full queue, a model loading): still SPEC's 500 (docs/decisions.md
  // "Upstream error mapping"), retryable, and carrying the server's Retry-After, which the SDKs wait for.
  return new GatewayError('internal_error', { message: failedMessage(status, code, message, retryAfter), headers: { 'Retry-After': String(retryAfter) } });
}

/** The 500s: what the operator must fix, or what passes by itself. */
function failedMessage(status: number, code: unknown, message: string | null, retryAfter: number | null): string {
  if (status === 401 || status === 403) {
    return `The model server refused the gateway's own credentials (HTTP ${status} from upstream): the operator must fix this endpoint's upstream API key. Your request and key are not at fault.`;
  }
  if (status === 404) {
    return code === 'model_not_found' || (message !== null && UNKNOWN_MODEL.test(message))
      ? "The model server does not serve this endpoint's configured model (HTTP 404 from upstream): the operator must fix the endpoint's upstream model."
      : "The model server has no such route (HTTP 404 from upstream): this endpoint's upstream base URL is misconfigured.";
  }
  const when = retryAfter === null ? '' : `; retry after ${retryAfter} s`;
  if (status === 503) return `The model server is overloaded or unavailable (HTTP 503 from upstream)${when || '; retry later'}.`;
  return `The model server failed (HTTP ${status} from upstream)${when}.`;
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
