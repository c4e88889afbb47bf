import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, GatewayError, toGatewayError, type ErrorCode } from '../../src/errors.js';

const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

describe('ERROR_CATALOGUE', () => {
  it.each(CODES)('gives %s an integer 4xx/5xx status, a type and a message', (code) => {
    const spec = ERROR_CATALOGUE[code];
    expect(Number.isInteger(spec.status)).toBe(true);
    expect(spec.status).toBeGreaterThanOrEqual(400);
    expect(spec.status).toBeLessThanOrEqual(599);
    expect(spec.type).toMatch(/\S/);
    expect(spec.message).toMatch(/\S/);
  });

  it.each(CODES)('spells %s in snake_case', (code) => {
    expect(code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
  });

  // Status and type pairs SPEC "Errors" and "Authentication" state outright.
  it.each<[ErrorCode, number, string | null]>([
    ['context_length_exceeded', 400, 'invalid_request_error'],
    ['unsupported_parameter', 400, 'invalid_request_error'],
    ['invalid_workspace_id', 400, null],
    ['authentication_required', 401, null],
    ['key_inactive', 401, null],
    ['scope_insufficient', 403, 'authentication_error'],
    ['project_mismatch', 403, null],
    ['endpoint_restricted', 403, null],
    ['workspace_not_allowed', 403, null],
    ['workspace_required', 403, null],
    ['workspace_not_found', 404, null],
    ['timeout', 408, 'timeout'],
    ['payload_too_large', 413, null],
    ['rate_limit_exceeded', 429, 'rate_limit_error'],
    ['token_rate_limit_exceeded', 429, 'rate_limit_error'],
    ['internal_error', 500, null],
  ])('maps %s to %i as SPEC states', (code, status, type) => {
    expect(ERROR_CATALOGUE[code].status).toBe(status);
    if (type !== null) expect(ERROR_CATALOGUE[code].type).toBe(type);
  });
});

/**
 * SPEC "Execution surface errors", column Retryable, for the codes the catalogue holds (the others are
 * not served yet). `x-should-retry` must agree with it.
 */
const EXEC_RETRYABLE: readonly [ErrorCode, boolean][] = [
  ['invalid_body', false],
  ['invalid_workspace_id', false],
  ['workspace_not_found', false],
  ['project_mismatch', false],
  ['authentication_required', false],
  ['payload_too_large', false],
  ['scope_insufficient', false],
  ['rate_limit_exceeded', true],
  ['capacity_exceeded', true],
  ['endpoint_restricted', false],
  ['invalid_state', false],
];

describe('retry decisions (x-should-retry)', () => {
  it.each(CODES)('gives %s a boolean retry decision', (code) => {
    expect(typeof ERROR_CATALOGUE[code].retryable).toBe('boolean');
  });

  it.each(EXEC_RETRYABLE)('agrees with the SPEC exec table on %s (retryable: %s)', (code, retryable) => {
    expect(ERROR_CATALOGUE[code].retryable).toBe(retryable);
  });

  // What a retry does, code by code (issue 21): clients retried 408s, each a new billed turn that could
  // not succeed.
  it.each<[ErrorCode, boolean, string]>([
    ['timeout', false, 'is a new billed turn against the same fixed tier deadline'],
    ['endpoint_budget_exhausted', false, 'waits for the hour or day to roll over'],
    ['workspace_budget_exhausted', false, 'waits for the hour or day to roll over'],
    ['webhook_test_limit_exceeded', false, 'waits up to an hour'],
    ['endpoint_unavailable', false, "waits for an operator to change the endpoint's status"],
    ['token_rate_limit_exceeded', true, 'succeeds once the token window moves on (Retry-After 60)'],
    ['service_draining', true, 'reaches another replica or the restarted one'],
    ['internal_error', true, 'usually reaches a model server that has recovered'],
    ['upstream_error', true, 'usually reaches a model server that has recovered'],
  ])('decides %s -> %s: a retry %s', (code, retryable) => {
    expect(ERROR_CATALOGUE[code].retryable).toBe(retryable);
  });

  it.each(CODES.filter((c) => ERROR_CATALOGUE[c].status < 500 && ERROR_CATALOGUE[c].status !== 429))(
    'never tells a client to retry the 4xx %s unchanged',
    (code) => {
      expect(ERROR_CATALOGUE[code].retryable).toBe(false);
    },
  );

  it('carries the decision on each GatewayError, internal_error included for anything unknown', () => {
    expect(new GatewayError('rate_limit_exceeded').retryable).toBe(true);
    expect(new GatewayError('timeout').retryable).toBe(false);
    expect(toGatewayError(new Error('boom')).retryable).toBe(true);
  });
});

describe('GatewayError', () => {
  it('takes status, type and default message from the catalogue', () => {
    const err = new GatewayError('workspace_not_found');
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({
      name: 'GatewayError',
      code: 'workspace_not_found',
      status: 404,
      type: 'not_found_error',
      message: ERROR_CATALOGUE.workspace_not_found.message,
      param: null,
    });
  });

  it('keeps a custom message, param and headers', () => {
    const err = new GatewayError('invalid_workspace_id', {
      message: '"x" is not a workspace id.',
      param: 'X-Workspace-Id',
      headers: { 'Retry-After': '1' },
    });
    expect(err).toMatchObject({ message: '"x" is not a workspace id.', param: 'X-Workspace-Id', headers: { 'Retry-After': '1' } });
  });

  it('renders exactly message, type, code and param in the envelope', () => {
    const envelope = new GatewayError('invalid_workspace_id', { param: 'workspace_id' }).toEnvelope();
    expect(envelope).toEqual({
      error: {
        message: ERROR_CATALOGUE.invalid_workspace_id.message,
        type: 'invalid_request_error',
        code: 'invalid_workspace_id',
        param: 'workspace_id',
      },
    });
  });

  it('renders a null param as null rather than leaving it out', () => {
    const { error } = new GatewayError('not_found').toEnvelope();
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(error.param).toBeNull();
  });

  it('adds extra fields inside error next to the four standard ones', () => {
    const retryStrategy = { type: 'exponential', initial_delay_ms: 1000, max_delay_ms: 60_000, multiplier: 2, jitter: true };
    const envelope = new GatewayError('rate_limit_exceeded', { extra: { retry_after: 7, retry_strategy: retryStrategy } }).toEnvelope();
    expect(envelope).toEqual({
      error: {
        message: ERROR_CATALOGUE.rate_limit_exceeded.message,
        type: 'rate_limit_error',
        code: 'rate_limit_exceeded',
        param: null,
        retry_after: 7,
        retry_strategy: retryStrategy,
      },
    });
  });
});

describe('toGatewayError', () => {
  it('passes a GatewayError through unchanged', () => {
    const err = new GatewayError('key_revoked');
    expect(toGatewayError(err)).toBe(err);
  });

  it.each<[string, unknown]>([
    ['an Error', new Error('SQLITE_CORRUPT: database disk image is malformed at /var/lib/switchboard/secret.db')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'secret')")],
    ['a thrown string', 'secret internal detail'],
    ['undefined', undefined],
    ['a plain object', { message: 'secret internal detail', status: 400 }],
  ])('wraps %s as internal_error without echoing it', (_label, thrown) => {
    const wrapped = toGatewayError(thrown);
    expect(wrapped).toMatchObject({ code: 'internal_error', status: 500, type: 'server_error' });
    expect(wrapped.message).toBe(ERROR_CATALOGUE.internal_error.message);
    expect(JSON.stringify(wrapped.toEnvelope())).not.toMatch(/secret|SQLITE/);
  });

  // Regression: extra fields were spread last and could overwrite code or param.
  it('never lets an extra field overwrite a standard one', () => {
    const { error } = new GatewayError('not_found', { param: 'model', extra: { code: 'spoofed', param: 'x', detail: 1 } }).toEnvelope();
    expect(error).toMatchObject({ code: 'not_found', param: 'model', detail: 1 });
  });
});
