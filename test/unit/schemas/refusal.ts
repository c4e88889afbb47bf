import { expect } from 'vitest';
import { GatewayError } from '../../../src/errors.js';

/** The GatewayError `run` throws; fails the test when it returns or throws anything else. */
export function refusalOf(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError, but nothing was thrown');
}

export interface ExpectedRefusal {
  code: string;
  param: string | null;
  status?: number;
  type?: string;
  message?: RegExp;
}

/** Every refusal is a 400 invalid_request_error unless the case says otherwise (SPEC "Chat and routing errors"). */
export function expectRefusal(run: () => unknown, expected: ExpectedRefusal): GatewayError {
  const err = refusalOf(run);
  expect({ code: err.code, param: err.param, status: err.status, type: err.type }).toEqual({
    code: expected.code,
    param: expected.param,
    status: expected.status ?? 400,
    type: expected.type ?? 'invalid_request_error',
  });
  if (expected.message) expect(err.message).toMatch(expected.message);
  return err;
}
