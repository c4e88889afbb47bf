// OpenAI-style error envelope: {error:{message,type,code,param}}. The gateway
// parses these from upstreams, so the simulator emits exactly this shape.

export class SimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers: ReadonlyArray<readonly [string, string]> = [],
  ) {
    super(message);
    this.name = 'SimError';
  }
}

export function invalidRequest(message: string, param: string | null = null): SimError {
  return new SimError(400, message, 'invalid_value', param);
}

/** OpenAI's `type` values, keyed by status class. */
export function errorTypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  if (status >= 400) return 'invalid_request_error';
  return 'api_error';
}

export function errorBody(status: number, message: string, code: string | null, param: string | null): string {
  return JSON.stringify({ error: { message, type: errorTypeFor(status), code, param } });
}

const REASONS: Readonly<Record<number, string>> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** uWS wants the full status line ("429 Too Many Requests"), not a number. */
export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? 'Status'}`;
}
