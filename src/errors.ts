/**
 * THE error catalogue. Every error the gateway sends is one of these codes (SPEC "Errors"); handlers
 * throw `GatewayError(code, ...)` and `http/respond.ts` renders it. A code without a status does not
 * compile. Codes are the stable client contract: never rename one.
 */

export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly message: string;
}

const INVALID = 'invalid_request_error';
const AUTH = 'authentication_error';
const PERMISSION = 'permission_error';
const NOT_FOUND = 'not_found_error';
const RATE = 'rate_limit_error';
const SERVER = 'server_error';

export const ERROR_CATALOGUE = {
  // 400: the request itself is wrong.
  invalid_request: { status: 400, type: INVALID, message: 'The request is invalid.' },
  invalid_json: { status: 400, type: INVALID, message: 'The request body is not valid JSON.' },
  invalid_body: { status: 400, type: INVALID, message: 'The request body failed validation.' },
  invalid_query: { status: 400, type: INVALID, message: 'A query parameter is invalid.' },
  context_length_exceeded: { status: 400, type: INVALID, message: 'Input plus requested output exceeds the context window.' },
  unsupported_parameter: { status: 400, type: INVALID, message: 'This parameter is not supported.' },
  unsupported_value: { status: 400, type: INVALID, message: 'This value is not supported.' },
  retention_not_permitted: { status: 400, type: INVALID, message: 'store: true is not permitted in a zero-data-retention workspace.' },
  invalid_workspace_id: { status: 400, type: INVALID, message: 'Workspace ids have the form ws_<hex>.' },
  invalid_limit: { status: 400, type: INVALID, message: 'limit must be an integer.' },
  // Semantic router management (SPEC "Semantic router management"; 400s without a stated type).
  invalid_semantic_router_config: { status: 400, type: INVALID, message: 'The semantic router configuration is invalid.' },
  unknown_semantic_router_setting: { status: 400, type: INVALID, message: 'Unknown semantic router setting.' },
  operational_default_forbidden: { status: 400, type: INVALID, message: 'An operational workspace cannot be the default workspace.' },
  url_not_allowed: { status: 400, type: INVALID, message: 'This URL may not be used as an outbound target.' },
  // Realtime sessions (in-band `error` events; the status is what an HTTP rendering would use).
  unknown_event: { status: 400, type: INVALID, message: 'Unknown client event type.' },
  input_audio_buffer_commit_empty: { status: 400, type: INVALID, message: 'The input audio buffer holds less than 100 ms of audio.' },
  input_audio_buffer_full: { status: 400, type: INVALID, message: 'The input audio buffer is full; commit or clear it.' },
  client_too_slow: { status: 400, type: INVALID, message: 'The client is not reading its events; the session is closed.' },
  session_idle_timeout: { status: 408, type: 'timeout', message: 'The session sent nothing for too long and is closed.' },
  webhook_limit_reached: { status: 400, type: INVALID, message: 'This project already has the maximum number of webhook endpoints.' },
  // 401: no usable identity.
  authentication_required: { status: 401, type: AUTH, message: 'No API key provided. Send Authorization: Bearer <API_KEY>.' },
  invalid_api_key: { status: 401, type: AUTH, message: 'The API key is not valid.' },
  key_revoked: { status: 401, type: AUTH, message: 'The API key has been revoked.' },
  key_expired: { status: 401, type: AUTH, message: 'The API key has expired.' },
  key_inactive: { status: 401, type: AUTH, message: 'The API key belongs to a deleted user.' },
  // 403: a valid key that may not do this. SPEC gives scope_insufficient the authentication_error type.
  scope_insufficient: { status: 403, type: AUTH, message: 'The API key lacks the scope this route needs.' },
  project_mismatch: { status: 403, type: PERMISSION, message: 'The API key belongs to another project.' },
  ip_not_allowed: { status: 403, type: PERMISSION, message: 'Requests from this address are not allowed for this API key.' },
  endpoint_restricted: { status: 403, type: PERMISSION, message: 'The API key is restricted to another endpoint.' },
  workspace_not_allowed: { status: 403, type: PERMISSION, message: 'The API key may not use this workspace.' },
  workspace_required: { status: 403, type: PERMISSION, message: 'Name a workspace with X-Workspace-Id.' },
  https_required: { status: 403, type: PERMISSION, message: 'This server accepts HTTPS only.' },
  // 404 / 405.
  not_found: { status: 404, type: NOT_FOUND, message: 'No route matches this path.' },
  model_not_found: { status: 404, type: NOT_FOUND, message: 'No such model in this project.' },
  endpoint_not_found: { status: 404, type: NOT_FOUND, message: 'No such endpoint in this project.' },
  workspace_not_found: { status: 404, type: NOT_FOUND, message: 'No such workspace in this project.' },
  api_key_not_found: { status: 404, type: NOT_FOUND, message: 'No such API key in this project.' },
  webhook_not_found: { status: 404, type: NOT_FOUND, message: 'No such webhook endpoint in this project.' },
  rule_not_found: { status: 404, type: NOT_FOUND, message: 'No such routing rule in this project.' },
  // SPEC "Chat and routing errors": the router found nothing to serve the turn.
  rule_endpoint_not_found: { status: 404, type: NOT_FOUND, message: "The routing rule's endpoint cannot serve this request." },
  no_routable_endpoints: { status: 404, type: NOT_FOUND, message: 'This workspace has no routable endpoints.' },
  method_not_allowed: { status: 405, type: INVALID, message: 'This method is not allowed on this path.' },
  // 409 (SPEC exec table): a transition the record's state does not allow, e.g. rotating a revoked key.
  invalid_state: { status: 409, type: INVALID, message: "This change is not allowed in the record's current state." },
  // 408 / 413 / 426.
  upgrade_required: { status: 426, type: INVALID, message: 'This route is a WebSocket: send an upgrade request (GET with Upgrade: websocket).' },
  timeout: { status: 408, type: 'timeout', message: "The request exceeded the endpoint's deadline." },
  payload_too_large: { status: 413, type: INVALID, message: 'The request body exceeds the size limit.' },
  // 429.
  rate_limit_exceeded: { status: 429, type: RATE, message: 'Request rate limit reached.' },
  token_rate_limit_exceeded: { status: 429, type: RATE, message: 'Token rate limit reached.' },
  capacity_exceeded: { status: 429, type: RATE, message: 'The model server is at capacity; retry later.' },
  endpoint_budget_exhausted: { status: 429, type: RATE, message: "The endpoint's token budget is spent." },
  workspace_budget_exhausted: { status: 429, type: RATE, message: "The workspace's token budget is spent." },
  webhook_test_limit_exceeded: { status: 429, type: RATE, message: 'Test deliveries are limited to 10 per webhook per hour.' },
  // 5xx.
  internal_error: { status: 500, type: SERVER, message: 'The server failed to handle the request.' },
  not_implemented: { status: 501, type: SERVER, message: 'This route is not implemented yet.' },
  upstream_error: { status: 502, type: SERVER, message: 'The model server returned an error.' },
  endpoint_unavailable: { status: 503, type: SERVER, message: 'The endpoint is not active.' },
  service_draining: { status: 503, type: SERVER, message: 'The server is shutting down.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface GatewayErrorOptions {
  message?: string;
  param?: string | null;
  /** Extra fields placed inside `error` (e.g. retry_after on 429s). */
  extra?: Record<string, unknown>;
  /** Extra response headers (e.g. Retry-After, Allow). */
  headers?: Record<string, string>;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const spec: ErrorSpec = ERROR_CATALOGUE[code];
    super(options.message ?? spec.message);
    this.name = 'GatewayError';
    this.code = code;
    this.status = spec.status;
    this.type = spec.type;
    this.param = options.param ?? null;
    this.extra = options.extra;
    this.headers = options.headers;
  }

  toEnvelope(): { error: Record<string, unknown> } {
    return {
      error: { message: this.message, type: this.type, code: this.code, param: this.param, ...withoutStandardFields(this.extra) },
    };
  }
}

const STANDARD_FIELDS = new Set(['message', 'type', 'code', 'param']);

/** Extra fields never overwrite the four standard ones. */
function withoutStandardFields(extra: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!extra) return {};
  return Object.fromEntries(Object.entries(extra).filter(([k]) => !STANDARD_FIELDS.has(k)));
}

/** Anything thrown that is not ours becomes internal_error, never echoing internals to the client. */
export function toGatewayError(err: unknown): GatewayError {
  return err instanceof GatewayError ? err : new GatewayError('internal_error');
}
