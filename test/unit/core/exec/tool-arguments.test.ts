import { describe, expect, it } from 'vitest';
import { checkArguments } from '../../../../src/core/exec/tool-arguments.js';
import { inProcessValidator } from '../../../../src/core/exec/schema-compiler.js';
import { GatewayError } from '../../../../src/errors.js';

const schema = {
  type: 'object',
  properties: { path: { type: 'string' }, options: { type: 'object', properties: { depth: { type: 'integer' } } }, 'a/b': { type: 'string' } },
  required: ['path'],
  additionalProperties: false,
};
const validator = inProcessValidator();
const check = (toolName: string, s: Record<string, unknown>, args: Record<string, unknown>): Promise<void> => checkArguments(validator, toolName, s, args, 'proj_test');

async function refusal(args: Record<string, unknown>, s: Record<string, unknown> = schema): Promise<GatewayError> {
  try {
    await check('ls', s, args);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('invocation arguments against the input_schema', () => {
  it('accepts arguments that match', async () => {
    await expect(check('ls', schema, { path: '/tmp', options: { depth: 2 } })).resolves.toBeUndefined();
  });

  it('names the offending value by JSON pointer after arguments', async () => {
    expect(await refusal({ path: '/tmp', options: { depth: 'deep' } })).toMatchObject({ code: 'invalid_body', status: 400, param: 'arguments/options/depth' });
    expect((await refusal({ path: 3 })).param).toBe('arguments/path');
  });

  it('names a missing required property where it belongs, and an unknown one', async () => {
    expect((await refusal({})).param).toBe('arguments/path');
    expect((await refusal({ path: 'x', extra: 1 })).param).toBe('arguments/extra');
  });

  it('escapes pointer characters in property names', async () => {
    expect((await refusal({ path: 'x', 'a/b': 1 })).param).toBe('arguments/a~1b');
  });

  it('compiles a schema with an $id again after the agent re-enrolls (a new object)', async () => {
    const withId = () => ({ $id: 'https://example.com/tool', type: 'object', properties: { n: { type: 'number' } } });
    await expect(check('t', withId(), { n: 1 })).resolves.toBeUndefined();
    await expect(check('t', withId(), { n: 2 })).resolves.toBeUndefined();
  });

  // Issue 31 item 2: with V8's backtracking engine this argument took 3-7.6 s (doubling per character).
  it('matches a catastrophic-backtracking pattern in linear time (the host-name pattern against "aaa…a!")', async () => {
    const host = { type: 'object', properties: { host: { type: 'string', pattern: '^([a-z0-9]+\\.?)+$' } } };
    const started = performance.now();
    const err = await refusal({ host: `${'a'.repeat(100_000)}!` }, host);
    expect(err).toMatchObject({ code: 'invalid_body', param: 'arguments/host' });
    expect(err.message).toContain('must match pattern');
    await expect(check('h', host, { host: 'build-01.example.com'.replace('-', '') })).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('runs patternProperties keys through the same engine', async () => {
    const keyed = { type: 'object', patternProperties: { '^([a-z]+)+$': { type: 'integer' } } };
    const started = performance.now();
    expect((await refusal({ [`${'a'.repeat(50_000)}`]: 'x' }, keyed)).param).toBe(`arguments/${'a'.repeat(50_000)}`);
    await expect(check('k', keyed, { [`${'a'.repeat(50_000)}!`]: 'not matched, so not checked' })).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1000);
  });

  // Found by the agents' fuzz run: ajv keys compiled patterns by their toString, and every RE2 pattern read the same.
  it('applies each of several patterns of one schema, not the first one everywhere', async () => {
    const two = { type: 'object', properties: { host: { type: 'string', pattern: '^[a-z.]+$' }, headers: { type: 'object', patternProperties: { '^x-[a-z-]+$': { type: 'string' } }, additionalProperties: false } } };
    await expect(check('two', two, { host: 'example.com', headers: { 'x-a': 'b' } })).resolves.toBeUndefined();
    expect((await refusal({ host: 'example.com', headers: { 'y-a': 'b' } }, two)).param).toBe('arguments/headers/y-a');
    expect((await refusal({ host: 'x-a' }, two)).param).toBe('arguments/host');
  });
});
