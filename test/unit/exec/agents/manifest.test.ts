/** The enroll message check (src/exec/agents/manifest.ts): zod for the envelope, ajv for each input_schema, and the manifest hash. */
import { describe, expect, it } from 'vitest';
import { canonicalJson, checkEnroll, manifestHash } from '../../../../src/exec/agents/manifest.js';

const tool = (extra: Record<string, unknown> = {}) => ({ name: 'echo', input_schema: { type: 'object' }, risk: 'read', ...extra });
const message = (tools: unknown[], extra: Record<string, unknown> = {}) => ({ type: 'enroll', registration_name: 'box-1', manifest: { tools }, ...extra });
const refusal = (raw: unknown): string => {
  const r = checkEnroll(raw);
  if (r.ok) throw new Error('accepted');
  return r.message;
};

describe('enroll message check', () => {
  it('accepts a minimal manifest and fills the defaults (description "", mcp_visible false)', () => {
    const r = checkEnroll(message([tool()]));
    expect(r.ok && r.message).toEqual({
      registrationName: 'box-1',
      description: undefined,
      workspaceIds: undefined,
      manifest: { tools: [{ name: 'echo', description: '', input_schema: { type: 'object' }, risk: 'read', mcp_visible: false }] },
    });
  });

  it('names the field that is wrong', () => {
    expect(refusal(message([tool({ risk: 'safe' })]))).toMatch(/^manifest\.tools\[0\]\.risk /);
    expect(refusal(message([tool({ name: 'a b' })]))).toMatch(/^manifest\.tools\[0\]\.name /);
    expect(refusal(message([tool(), tool()]))).toMatch(/^manifest\.tools\[1\]\.name repeats/);
    expect(refusal(message([]))).toMatch(/^manifest\.tools must list at least one tool/);
    expect(refusal(message([tool({ extra: 1 })]))).toMatch(/manifest\.tools\[0\]/);
    expect(refusal(message([tool()], { registration_name: '-x' }))).toMatch(/^registration_name /);
    expect(refusal(message([tool()], { workspace_ids: ['default'] }))).toMatch(/^workspace_ids\[0\] /);
    expect(refusal({ type: 'enroll' })).toMatch(/^registration_name/);
  });

  it('refuses an input_schema ajv cannot compile, or one that does not describe an object', () => {
    expect(refusal(message([tool({ input_schema: { type: 'object', properties: { a: { type: 'strin' } } } })]))).toMatch(/input_schema \(echo\) is not a usable JSON Schema/);
    expect(refusal(message([tool({ input_schema: { $ref: 'https://example.com/remote.json' } })]))).toMatch(/not a usable JSON Schema/);
    expect(refusal(message([tool({ input_schema: { type: 'array' } })]))).toMatch(/must describe an object/);
    expect(refusal(message([tool({ input_schema: [] })]))).toMatch(/input_schema/);
  });

  it('accepts unknown keywords and formats (strict mode off) and the same $id in two manifests', () => {
    const schema = { $id: 'https://example.com/args', type: 'object', properties: { d: { type: 'string', format: 'made-up' } }, 'x-note': 1 };
    expect(checkEnroll(message([tool({ input_schema: schema })])).ok).toBe(true);
    expect(checkEnroll(message([tool({ input_schema: { ...schema } })])).ok).toBe(true);
  });

  it('hashes the canonical JSON: key order does not change the hash, content does', () => {
    expect(canonicalJson({ b: [{ z: 1, a: null }], a: 'x' })).toBe('{"a":"x","b":[{"a":null,"z":1}]}');
    const a = { tools: [{ name: 'echo', description: '', input_schema: { type: 'object', properties: {} }, risk: 'read' as const, mcp_visible: false }] };
    const b = { tools: [{ mcp_visible: false, risk: 'read' as const, input_schema: { properties: {}, type: 'object' }, description: '', name: 'echo' }] };
    expect(manifestHash(a)).toBe(manifestHash(b));
    expect(manifestHash(a)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(manifestHash({ tools: [{ ...a.tools[0]!, risk: 'write' }] })).not.toBe(manifestHash(a));
  });
});
