import { describe, expect, it } from 'vitest';
import { checkArguments } from '../../../../src/core/exec/tool-arguments.js';
import { GatewayError } from '../../../../src/errors.js';

const schema = {
  type: 'object',
  properties: { path: { type: 'string' }, options: { type: 'object', properties: { depth: { type: 'integer' } } }, 'a/b': { type: 'string' } },
  required: ['path'],
  additionalProperties: false,
};

function refusal(args: Record<string, unknown>): GatewayError {
  try {
    checkArguments('ls', schema, args);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('invocation arguments against the input_schema', () => {
  it('accepts arguments that match', () => {
    expect(() => checkArguments('ls', schema, { path: '/tmp', options: { depth: 2 } })).not.toThrow();
  });

  it('names the offending value by JSON pointer after arguments', () => {
    expect(refusal({ path: '/tmp', options: { depth: 'deep' } })).toMatchObject({ code: 'invalid_body', status: 400, param: 'arguments/options/depth' });
    expect(refusal({ path: 3 }).param).toBe('arguments/path');
  });

  it('names a missing required property where it belongs, and an unknown one', () => {
    expect(refusal({}).param).toBe('arguments/path');
    expect(refusal({ path: 'x', extra: 1 }).param).toBe('arguments/extra');
  });

  it('escapes pointer characters in property names', () => {
    expect(refusal({ path: 'x', 'a/b': 1 }).param).toBe('arguments/a~1b');
  });

  it('compiles a schema with an $id again after the agent re-enrolls (a new object)', () => {
    const withId = () => ({ $id: 'https://example.com/tool', type: 'object', properties: { n: { type: 'number' } } });
    expect(() => checkArguments('t', withId(), { n: 1 })).not.toThrow();
    expect(() => checkArguments('t', withId(), { n: 2 })).not.toThrow();
  });
});
