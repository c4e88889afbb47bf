/**
 * THE error catalogue. Every error the gateway sends is one of these codes (SPEC "Errors"); handlers
 * throw `GatewayError(code, ...)` and `http/reply.ts` renders it. A code without a status or a retry
 * decision does not compile. Codes are the stable client contract: never rename one.
 */

export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly message: string;
  /**
   * Whether sending the same request again can succeed, sent as `x-should-retry` (which the official
   * openai SDKs obey over their status rules). Clients otherwise retry 408, 409, 429 and every 5xx by
   * status alone; each retry of a request that reached a model is a new, billed turn (issue 21). true only
   * where the condition passes by itself within a client's backoff (SPEC exec table "Retryable: yes", a
   * request or token window, a draining replica); a wait of hours, an operator's action or a request that
   * must change first is false.
   */
  readonly retryable: boolean;
}

const INVALID = 'invalid_request_error';
const AUTH = 'authentication_error';
const PERMISSION = 'permission_error';
const NOT_FOUND = 'not_found_error';
const RATE = 'rate_limit_error';
const SERVER = 'server_error';

export const ERROR_CATALOGUE = {
  // 400: the request itself is wrong.
  invalid_request: { status: 400, type: INVALID, message: 'The request is invalid.', retryable: false },
  invalid_json: { status: 400, type: INVALID, message: 'The request body is not valid JSON.', retryable: false },
  invalid_body: { status: 400, type: INVALID, message: 'The request body failed validation.', retryable: false },
  invalid_query: { status: 400, type: INVALID, message: 'A query parameter is invalid.', retryable: false },
  context_length_exceeded: { status: 400, type: INVALID, message: 'Input plus requested output exceeds the context window.', retryable: false },
  unsupported_parameter: { status: 400, type: INVALID, message: 'This parameter is not supported.', retryable: false },
  unsupported_value: { status: 400, type: INVALID, message: 'This value is not supported.', retryable: false },
  retention_not_permitted: { status: 400, type: INVALID, message: 'store: true is not permitted in a zero-data-retention workspace.', retryable: false },
  // The multimodel route (SPEC "Chat and routing errors"): a sub-task needs a modality no endpoint serves.
  no_vision_capable_endpoint: { status: 400, type: INVALID, message: 'No endpoint of this project accepts images.', retryable: false },
  no_video_input_capable_endpoint: { status: 400, type: INVALID, message: 'No endpoint of this project accepts video input.', retryable: false },
  no_audio_input_capable_endpoint: { status: 400, type: INVALID, message: 'No endpoint of this project accepts audio input.', retryable: false },
  invalid_workspace_id: { status: 400, type: INVALID, message: 'Workspace ids have the form ws_<hex>.', retryable: false },
  invalid_limit: { status: 400, type: INVALID, message: 'limit must be an integer.', retryable: false },
  // Semantic router management (SPEC "Semantic router management"; 400s without a stated type).
  invalid_semantic_router_config: { status: 400, type: INVALID, message: 'The semantic router configuration is invalid.', retryable: false },
  unknown_semantic_router_setting: { status: 400, type: INVALID, message: 'Unknown semantic router setting.', retryable: false },
  operational_default_forbidden: { status: 400, type: INVALID, message: 'An operational workspace cannot be the default workspace.', retryable: false },
  url_not_allowed: { status: 400, type: INVALID, message: 'This URL may not be used as an outbound target.', retryable: false },
  // Realtime sessions (in-band `error` events; the status is what an HTTP rendering would use).
  unknown_event: { status: 400, type: INVALID, message: 'Unknown client event type.', retryable: false },
  input_audio_buffer_commit_empty: { status: 400, type: INVALID, message: 'The input audio buffer holds less than 100 ms of audio.', retryable: false },
  input_audio_buffer_full: { status: 400, type: INVALID, message: 'The input audio buffer is full; commit or clear it.', retryable: false },
  client_too_slow: { status: 400, type: INVALID, message: 'The client is not reading its events; the session is closed.', retryable: false },
  // The session is gone; a reconnect is a new session, the client's decision.
  session_idle_timeout: { status: 408, type: 'timeout', message: 'The session sent nothing for too long and is closed.', retryable: false },
  webhook_limit_reached: { status: 400, type: INVALID, message: 'This project already has the maximum number of webhook endpoints.', retryable: false },
  // 401: no usable identity.
  authentication_required: { status: 401, type: AUTH, message: 'No API key provided. Send Authorization: Bearer <API_KEY>.', retryable: false },
  invalid_api_key: { status: 401, type: AUTH, message: 'The API key is not valid.', retryable: false },
  key_revoked: { status: 401, type: AUTH, message: 'The API key has been revoked.', retryable: false },
  key_expired: { status: 401, type: AUTH, message: 'The API key has expired.', retryable: false },
  key_inactive: { status: 401, type: AUTH, message: 'The API key belongs to a deleted user.', retryable: false },
  // Dashboard pages (issue 22): a write without a signed-in session.
  session_required: { status: 401, type: AUTH, message: 'Sign in to the dashboard first.', retryable: false },
  // 403: a valid key that may not do this. SPEC gives scope_insufficient the authentication_error type.
  scope_insufficient: { status: 403, type: AUTH, message: 'The API key lacks the scope this route needs.', retryable: false },
  project_mismatch: { status: 403, type: PERMISSION, message: 'The API key belongs to another project.', retryable: false },
  ip_not_allowed: { status: 403, type: PERMISSION, message: 'Requests from this address are not allowed for this API key.', retryable: false },
  endpoint_restricted: { status: 403, type: PERMISSION, message: 'The API key is restricted to another endpoint.', retryable: false },
  workspace_not_allowed: { status: 403, type: PERMISSION, message: 'The API key may not use this workspace.', retryable: false },
  workspace_required: { status: 403, type: PERMISSION, message: 'Name a workspace with X-Workspace-Id.', retryable: false },
  // SPEC Authentication 16: a dashboard write without the session's X-CSRF-Token, or from another origin.
  csrf_token_invalid: { status: 403, type: PERMISSION, message: 'The CSRF token is missing or wrong, or the request came from another origin.', retryable: false },
  https_required: { status: 403, type: PERMISSION, message: 'This server accepts HTTPS only.', retryable: false },
  // MCP (docs/mcp.md "Origin and Host"): a browser page on another origin, or a Host that is not this server's (DNS rebinding).
  origin_not_allowed: { status: 403, type: PERMISSION, message: 'The MCP server does not accept requests from this Origin or Host.', retryable: false },
  // 404 / 405.
  not_found: { status: 404, type: NOT_FOUND, message: 'No route matches this path.', retryable: false },
  model_not_found: { status: 404, type: NOT_FOUND, message: 'No such model in this project.', retryable: false },
  endpoint_not_found: { status: 404, type: NOT_FOUND, message: 'No such endpoint in this project.', retryable: false },
  workspace_not_found: { status: 404, type: NOT_FOUND, message: 'No such workspace in this project.', retryable: false },
  api_key_not_found: { status: 404, type: NOT_FOUND, message: 'No such API key in this project.', retryable: false },
  webhook_not_found: { status: 404, type: NOT_FOUND, message: 'No such webhook endpoint in this project.', retryable: false },
  response_not_found: { status: 404, type: NOT_FOUND, message: 'No such stored response in this project.', retryable: false },
  conversation_not_found: { status: 404, type: NOT_FOUND, message: 'No such conversation in this project.', retryable: false },
  conversation_item_not_found: { status: 404, type: NOT_FOUND, message: 'No such item in this conversation.', retryable: false },
  rule_not_found: { status: 404, type: NOT_FOUND, message: 'No such routing rule in this project.', retryable: false },
  file_not_found: { status: 404, type: NOT_FOUND, message: 'No such file in this project.', retryable: false },
  upload_not_found: { status: 404, type: NOT_FOUND, message: 'No such upload in this project.', retryable: false },
  // SPEC "Chat and routing errors": the router found nothing to serve the turn.
  rule_endpoint_not_found: { status: 404, type: NOT_FOUND, message: "The routing rule's endpoint cannot serve this request.", retryable: false },
  no_routable_endpoints: { status: 404, type: NOT_FOUND, message: 'This workspace has no routable endpoints.', retryable: false },
  method_not_allowed: { status: 405, type: INVALID, message: 'This method is not allowed on this path.', retryable: false },
  // 409 (SPEC exec table): a transition the record's state does not allow, e.g. rotating a revoked key.
  invalid_state: { status: 409, type: INVALID, message: "This change is not allowed in the record's current state.", retryable: false },
  // 409 (Models API, docs/decisions.md): an alias may not take a served model id or an existing alias's.
  model_exists: { status: 409, type: INVALID, message: 'A model or model alias with this id already exists in this project.', retryable: false },
  // 408 / 413 / 426.
  upgrade_required: { status: 426, type: INVALID, message: 'This route is a WebSocket: send an upgrade request (GET with Upgrade: websocket).', retryable: false },
  // The tier deadline is not client-configurable (SPEC Limits): the same request is a new billed turn that
  // will most likely overrun it again. Streaming, a smaller max_tokens or a faster tier are the fixes.
  timeout: { status: 408, type: 'timeout', message: "The request exceeded the endpoint's deadline.", retryable: false },
  payload_too_large: { status: 413, type: INVALID, message: 'The request body exceeds the size limit.', retryable: false },
  // 429. Request and token windows free up within a minute (Retry-After says when); SPEC exec table:
  // rate_limit_exceeded and capacity_exceeded are retryable.
  rate_limit_exceeded: { status: 429, type: RATE, message: 'Request rate limit reached.', retryable: true },
  token_rate_limit_exceeded: { status: 429, type: RATE, message: 'Token rate limit reached.', retryable: true },
  capacity_exceeded: { status: 429, type: RATE, message: 'The model server is at capacity; retry later.', retryable: true },
  // Budgets reset at the next UTC hour or day, or never (hard cap): no client backoff outlasts that.
  endpoint_budget_exhausted: { status: 429, type: RATE, message: "The endpoint's token budget is spent.", retryable: false },
  workspace_budget_exhausted: { status: 429, type: RATE, message: "The workspace's token budget is spent.", retryable: false },
  // An hour-long window of an operator's manual action: retry_after says when, a backoff loop would not.
  webhook_test_limit_exceeded: { status: 429, type: RATE, message: 'Test deliveries are limited to 10 per webhook per hour.', retryable: false },
  // docs/mcp.md "Sessions": every session of the key (or project) has a call running; one ends, or is ended.
  mcp_session_limit_reached: { status: 429, type: RATE, message: 'This API key or project holds as many MCP sessions as it may.', retryable: true },
  // 5xx. internal_error is mostly a model server that failed or could not be reached (upstream-errors.ts),
  // which passes (a restart, a freed GPU); SPEC's exec table calls its transient 500 and 502 retryable. A
  // failed turn is charged no tokens, and a few quick retries are what clients already do with a 500.
  internal_error: { status: 500, type: SERVER, message: 'The server failed to handle the request.', retryable: true },
  // Not until a release ships the route: every retry of it is certain to fail again.
  upstream_error: { status: 502, type: SERVER, message: 'The model server returned an error.', retryable: true },
  // The endpoint's status (provisioning, suspended, error) is the operator's to change, not a passing state.
  endpoint_unavailable: { status: 503, type: SERVER, message: 'The endpoint is not active.', retryable: false },
  // Another replica, or this one once restarted, will serve the same request.
  service_draining: { status: 503, type: SERVER, message: 'The server is shutting down.', retryable: true },
  // coordination.on_outage: fail_closed (issue 12): Redis comes back, or another replica reaches it.
  limits_unavailable: { status: 503, type: SERVER, message: 'The shared rate limiter is unreachable; retry shortly.', retryable: true },
  // PostgreSQL (storage.kind postgres) did not answer a read or write this request needed (docs/deploy.md "Outages").
  store_unavailable: { status: 503, type: SERVER, message: 'The store is unreachable; retry shortly.', retryable: true },
  // The execution surface (SPEC "Execution surface errors"; docs/exec.md). Statuses and retryability are
  // SPEC's; types are ours where SPEC shows none.
  exec_tool_not_found: { status: 400, type: INVALID, message: 'No online agent offers this tool.', retryable: false },
  tool_not_mcp_visible: { status: 400, type: INVALID, message: 'This tool is not exposed on the MCP-visible surface.', retryable: false },
  missing_workspace_id: { status: 400, type: INVALID, message: 'Name the workspace (workspace_id).', retryable: false },
  model_capability_missing: { status: 400, type: INVALID, message: "The workspace's model lacks a required capability.", retryable: false },
  already_terminal: { status: 400, type: INVALID, message: 'The record is already in a terminal state.', retryable: false },
  insufficient_quota: { status: 402, type: 'insufficient_quota', message: 'No remaining credit.', retryable: false },
  billing_delinquent: { status: 402, type: PERMISSION, message: 'The account has an unpaid balance.', retryable: false },
  cross_project_access: { status: 403, type: PERMISSION, message: "The API key touched another project's resource.", retryable: false },
  // Not SPEC's (docs/decisions.md "Who decides an approval"): SPEC's approvals are human and granted by a
  // privileged user, and no code of its table says "not you".
  approval_not_permitted: {
    status: 403,
    type: PERMISSION,
    message: 'Approvals are decided by a project owner or admin, or a management key with no user, never by who asked.',
    retryable: false,
  },
  invocation_not_found: { status: 404, type: NOT_FOUND, message: 'No such invocation in this project.', retryable: false },
  approval_not_found: { status: 404, type: NOT_FOUND, message: 'No such approval in this project.', retryable: false },
  agent_not_found: { status: 404, type: NOT_FOUND, message: 'No such execution agent in this project.', retryable: false },
  join_key_not_found: { status: 404, type: NOT_FOUND, message: 'No such join key in this project.', retryable: false },
  invocation_terminal: { status: 409, type: INVALID, message: 'The invocation already completed, failed or was cancelled.', retryable: false },
  approval_not_pending: { status: 409, type: INVALID, message: 'The approval was already accepted, rejected or expired.', retryable: false },
  exec_idempotency_conflict: { status: 409, type: INVALID, message: 'This Idempotency-Key was used with a different body.', retryable: false },
  // SPEC: "cancelled" 499 also appears mid-stream inside the SSE error payload, with no type field there.
  cancelled: { status: 499, type: INVALID, message: 'The invocation was cancelled.', retryable: false },
  workspace_lookup_failed: { status: 500, type: SERVER, message: 'The workspace could not be resolved; retry.', retryable: true },
  retriever_failed: { status: 502, type: SERVER, message: 'The retrieval backend failed.', retryable: true },
  tool_executor_unavailable: { status: 503, type: SERVER, message: 'No agent is online for this tool.', retryable: true },
  unavailable: { status: 503, type: SERVER, message: 'The execution backend is temporarily unable to serve.', retryable: true },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface GatewayErrorOptions {
  message?: string;
  param?: string | null;
  /**
   * SPEC gives a code a second status on some routes: exec_tool_not_found is 400 as an invocation target
   * and 404 on the tools catalog read. Otherwise the catalogue's status.
   */
  status?: number;
  /** Extra fields placed inside `error` (e.g. retry_after on 429s). */
  extra?: Record<string, unknown>;
  /** Extra response headers (e.g. Retry-After, Allow). */
  headers?: Record<string, string>;
  /**
   * Overrides the catalogue's retry decision for this one error, where the same code covers a passing and a
   * lasting condition: an internal_error from a model server that refused the gateway's own credentials
   * fails until an operator acts, one from an unreachable server may pass.
   */
  retryable?: boolean;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** The catalogue's decision for the code (ErrorSpec.retryable), sent as `x-should-retry`. */
  readonly retryable: boolean;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const spec: ErrorSpec = ERROR_CATALOGUE[code];
    super(options.message ?? spec.message);
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? spec.status;
    this.type = spec.type;
    this.retryable = options.retryable ?? spec.retryable;
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
