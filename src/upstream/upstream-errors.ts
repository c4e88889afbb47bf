/**
 * Upstream failures mapped onto catalogue codes, in one place (like openai-node's APIError.generate).
 * The client gets a SPEC code where one applies; anything else is 500 internal_error without echoing the
 * model server's internals. One client request is one upstream request: nothing here retries.
 */
import { GatewayError } from '../errors.js';

type Json = Record<string, unknown>;

const CONTEXT_OVERFLOW = /maximum context length|context length|context window|too many tokens|prompt is too long/i;

function upstreamMessage(body: string): { message: string | null; code: unknown; param: unknown } {
  try {
    const parsed = JSON.parse(body) as Json;
    const err = (parsed.error && typeof parsed.error === 'object' ? parsed.error : parsed) as Json;
    return {
      message: typeof err.message === 'string' ? err.message.slice(0, 500) : null,
      code: err.code,
      param: err.param,
    };
  } catch {
    return { message: null, code: null, param: null };
  }
}

export function mapUpstreamError(status: number, body: string, retryAfter: string | null): GatewayError {
  const { message, code, param } = upstreamMessage(body);
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
    return new GatewayError('capacity_exceeded', {
      headers: { 'Retry-After': String(seconds) },
      extra: { retry_after: seconds },
    });
  }
  if (status === 408 || status === 504) return new GatewayError('timeout', { message: 'The model server timed out.' });
  return new GatewayError('internal_error', { message: `The model server failed (HTTP ${status}).` });
}

/** Connection refused, reset, DNS failure...: the upstream could not be reached at all. */
export function unreachableUpstream(): GatewayError {
  return new GatewayError('internal_error', { message: 'The model server could not be reached.' });
}
