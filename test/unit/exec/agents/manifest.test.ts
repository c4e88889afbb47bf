/** The enroll message check (src/exec/agents/manifest.ts): zod for the envelope, ajv for each input_schema, and the manifest hash. */
import { describe, expect, it } from 'vitest';
import { canonicalJson, checkEnroll, manifestHash, parseEnroll } from '../../../../src/exec/agents/manifest.js';
import { MAX_MANIFEST_NODES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MAX_SCHEMA_PROPERTIES } from '../../../../src/core/exec/schema-bounds.js';

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
    expect(refusal(message([tool({ extra: 1 })]))).toBe('manifest.tools[0].extra is not a field of manifest.tools[0]');
    expect(refusal(message([tool()], { extra: 1 }))).toBe('extra is not a field of the enroll message');
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

  // Issue 31 item 2: patterns run on RE2 (linear time); what it cannot run is refused at enrollment, naming tool and pattern.
  it('refuses a pattern with a backreference or lookaround, naming the tool and the pattern', () => {
    const withPattern = (pattern: string, name = 'lookup') => message([tool({ name, input_schema: { type: 'object', properties: { q: { type: 'string', pattern } } } })]);
    expect(refusal(withPattern('^(a+)\\1$'))).toMatch(/^manifest\.tools\[0\]\.input_schema \(lookup\) cannot be used: the pattern "\^\(a\+\)\\\\1\$" uses a backreference \(\\1\); patterns run on RE2/);
    expect(refusal(withPattern('(?<w>a)\\k<w>'))).toMatch(/uses a backreference \(\\k\)/);
    expect(refusal(withPattern('^a(?=b)'))).toMatch(/\(lookup\) cannot be used: the pattern "\^a\(\?=b\)" cannot be run: .*lookahead/);
    expect(refusal(withPattern('(?<!x)y'))).toMatch(/cannot be run/);
    expect(refusal(withPattern('[a-'))).toMatch(/is not a valid regular expression \(ECMA-262, u flag\)/);
    expect(refusal(withPattern('a'.repeat(1025)))).toMatch(/is 1025 characters long; at most 1024/);
    const keyed = message([tool({ name: 'keyed', input_schema: { type: 'object', patternProperties: { '^(x)\\1$': { type: 'integer' } } } })]);
    expect(refusal(keyed)).toMatch(/\(keyed\) cannot be used: the pattern .* uses a backreference/);
    // What RE2 runs as ECMA-262 does is accepted: classes, anchors, quantifiers, \d, \p{L}, a backslash in a class.
    expect(checkEnroll(withPattern('^[\\p{L}\\d_.-]{1,64}(\\.[a-z]{2,})?$')).ok).toBe(true);
    expect(checkEnroll(withPattern('^[\\\\1]+$')).ok).toBe(true);
  });

  // Issue 31 item 1: a manifest of 4 tools x 1,500 properties (148 KiB) took seconds of ajv compile on the event loop.
  it('refuses schemas past the bounds before compiling anything, saying what is allowed', () => {
    const props = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }]));
    const issue = message(Array.from({ length: 4 }, (_, i) => tool({ name: `t${i}`, input_schema: { type: 'object', properties: props(1500) } })));
    expect(JSON.stringify(issue).length).toBeGreaterThan(100_000);
    const started = performance.now();
    expect(refusal(issue)).toMatch(new RegExp(`^manifest\\.tools\\[0\\]\\.input_schema \\(t0\\) declares more than ${MAX_SCHEMA_PROPERTIES} properties \\(at most ${MAX_SCHEMA_PROPERTIES} properties, ${MAX_SCHEMA_NODES} objects and arrays, ${MAX_SCHEMA_DEPTH} levels of nesting and 64 KiB of JSON per input_schema; ${MAX_MANIFEST_NODES} objects and arrays and 1 MiB of JSON per manifest\\)$`));
    expect(performance.now() - started).toBeLessThan(500);
    expect(parseEnroll(message([tool({ input_schema: { type: 'object', properties: props(MAX_SCHEMA_PROPERTIES) } })])).ok).toBe(true);

    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) deep = { type: 'object', properties: { x: deep } };
    expect(refusal(message([tool({ input_schema: deep })]))).toMatch(/nests objects and arrays deeper than 32 levels/);
    // Found by the agents' fuzz run: 100,000 levels overflowed the stack of JSON.stringify before the depth was checked.
    const abyss = JSON.parse(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`) as Record<string, unknown>;
    expect(refusal(message([tool({ input_schema: abyss })]))).toMatch(/nests objects and arrays deeper than 32 levels/);
    const wide = { type: 'object', properties: { a: { anyOf: Array.from({ length: MAX_SCHEMA_NODES }, (_, i) => ({ const: i })) } } };
    expect(refusal(message([tool({ input_schema: wide })]))).toMatch(/has more than 1024 objects and arrays/);
    const long = { type: 'object', description: 'x'.repeat(70_000) };
    expect(refusal(message([tool({ input_schema: long })]))).toMatch(/is \d+ characters of JSON; at most 65536/);
    // Each tool within its bounds, the manifest past its total.
    const fat = { type: 'object', properties: { a: { anyOf: Array.from({ length: 1000 }, (_, i) => ({ const: i })) } } };
    const many = message(Array.from({ length: 5 }, (_, i) => tool({ name: `f${i}`, input_schema: fat })));
    expect(refusal(many)).toMatch(/^manifest\.tools\[4\]\.input_schema \(f4\) brings the manifest past 4096 objects and arrays in all/);
  });
});
