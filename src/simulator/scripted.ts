import { isRecord } from './json.js';

// Two ways a test scripts what the simulated model answers (docs/simulator.md):
// - a `[call: NAME {json arguments}]` marker in the last user message: the turn is a call of the tool
//   NAME with exactly those arguments (when NAME is among the request's tools), so an agent client that
//   runs the call (Codex's exec_command, say) runs a harmless command chosen by the test;
// - `response_format: json_schema`: the answer is a JSON value valid against the schema, built from it
//   deterministically, so structured output parses as it would against a real model.

export interface ScriptedCall {
  readonly name: string;
  /** JSON text, as the tool call carries it. */
  readonly arguments: string;
}

const CALL_MARKER = /\[call:\s*([A-Za-z0-9_.:-]+)\s*(\{.*\})\s*\]/s;

/** The marker's call, or null when there is none or its arguments are not a JSON object. */
export function scriptedCall(text: string): ScriptedCall | null {
  const match = CALL_MARKER.exec(text);
  if (!match) return null;
  try {
    const args: unknown = JSON.parse(match[2] as string);
    return isRecord(args) ? { name: match[1] as string, arguments: JSON.stringify(args) } : null;
  } catch {
    return null;
  }
}

/** Bounded so that a recursive schema (a tree node whose children are nodes) still ends. */
const MAX_DEPTH = 8;

const STRING_FORMATS: Readonly<Record<string, string>> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '00:00:00Z',
  email: 'sample@example.com',
  uri: 'https://example.com/sample',
  uuid: '00000000-0000-4000-8000-000000000000',
};

type Schema = Record<string, unknown>;

function resolveRef(root: Schema, ref: string): Schema {
  // Local references only (#/$defs/X, #/definitions/X), the kind structured-output helpers emit.
  let node: unknown = root;
  for (const part of ref.replace(/^#\/?/, '').split('/').filter((p) => p !== '')) {
    node = isRecord(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  }
  return isRecord(node) ? node : {};
}

function sampleString(schema: Schema): string {
  const format = typeof schema['format'] === 'string' ? STRING_FORMATS[schema['format']] : undefined;
  let text = format ?? 'sample';
  const min = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0;
  const max = typeof schema['maxLength'] === 'number' ? schema['maxLength'] : Number.POSITIVE_INFINITY;
  while (text.length < min) text += 'x';
  return text.slice(0, max);
}

function sampleNumber(schema: Schema, integer: boolean): number {
  const num = (key: string): number | undefined => (typeof schema[key] === 'number' ? (schema[key] as number) : undefined);
  const low = num('minimum') ?? (num('exclusiveMinimum') !== undefined ? (num('exclusiveMinimum') as number) + 1 : undefined);
  const high = num('maximum') ?? (num('exclusiveMaximum') !== undefined ? (num('exclusiveMaximum') as number) - 1 : undefined);
  let value = low ?? Math.min(1, high ?? 1);
  if (integer) value = Math.ceil(value);
  return value;
}

function sampleOf(schema: unknown, root: Schema, depth: number): unknown {
  if (!isRecord(schema) || depth > MAX_DEPTH) return null;
  if (typeof schema['$ref'] === 'string') return sampleOf(resolveRef(root, schema['$ref']), root, depth + 1);
  if ('const' in schema) return schema['const'];
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0];
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      // The first branch that is not just `null` (zod's optional-nullable fields put null second).
      const branch = branches.find((b) => !(isRecord(b) && b['type'] === 'null')) ?? branches[0];
      return sampleOf(branch, root, depth + 1);
    }
  }
  const rawType = schema['type'];
  const type = Array.isArray(rawType) ? (rawType.find((t) => t !== 'null') ?? rawType[0]) : rawType;
  if (type === 'string') return sampleString(schema);
  if (type === 'integer' || type === 'number') return sampleNumber(schema, type === 'integer');
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  if (type === 'array') {
    const min = typeof schema['minItems'] === 'number' ? schema['minItems'] : 1;
    const max = typeof schema['maxItems'] === 'number' ? schema['maxItems'] : Number.POSITIVE_INFINITY;
    const count = Math.min(Math.max(min, 1), max);
    return Array.from({ length: count }, () => sampleOf(schema['items'], root, depth + 1));
  }
  if (type === 'object' || isRecord(schema['properties'])) {
    const out: Record<string, unknown> = {};
    const props = isRecord(schema['properties']) ? schema['properties'] : {};
    // Every property, not only the required ones: strict structured output requires them all.
    for (const [key, sub] of Object.entries(props)) out[key] = sampleOf(sub, root, depth + 1);
    return out;
  }
  return null;
}

/** A JSON value valid against `schema` (the subset of JSON Schema that structured output uses). */
export function schemaSample(schema: unknown): unknown {
  return sampleOf(schema, isRecord(schema) ? schema : {}, 0);
}
