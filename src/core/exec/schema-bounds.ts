/**
 * Bounds of an enrollment manifest's tool schemas (issue 31, item 1; docs/exec.md "Agent protocol").
 * ajv's compile time grows faster than linearly with a schema's size (measured: 256 string properties
 * with patterns ~60 ms, 1,000 ~420 ms, 1,500 ~4 s; an `anyOf` of 1,000 branches ~280 ms), and a join key
 * or agent key may enroll as often as the rate limit lets it. The bounds keep the worst allowed manifest
 * near a second of compile time, on the schema thread, while staying far above what real agents send (the
 * tool schemas of MCP servers have tens of properties). They are checked before anything is compiled, by
 * one walk that stops at the first bound passed.
 */

/** JSON text of one `input_schema`, in UTF-16 code units. */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** JSON text of the whole manifest `{tools: [...]}`. */
export const MAX_MANIFEST_CHARS = 1024 * 1024;
/** Keys of every `properties` and `patternProperties` object of one schema, at any depth. */
export const MAX_SCHEMA_PROPERTIES = 256;
/** Objects and arrays in one schema (each subschema is at least one). */
export const MAX_SCHEMA_NODES = 1024;
/** Objects and arrays in all of a manifest's schemas together. */
export const MAX_MANIFEST_NODES = 4096;
/** Nesting of objects and arrays in one schema (the schema itself is level 1). */
export const MAX_SCHEMA_DEPTH = 32;

/** The bounds as the refusal messages and docs state them. */
export const SCHEMA_BOUNDS_TEXT =
  `at most ${MAX_SCHEMA_PROPERTIES} properties, ${MAX_SCHEMA_NODES} objects and arrays, ${MAX_SCHEMA_DEPTH} levels of nesting ` +
  `and ${MAX_SCHEMA_CHARS / 1024} KiB of JSON per input_schema; ${MAX_MANIFEST_NODES} objects and arrays and ` +
  `${MAX_MANIFEST_CHARS / 1024 / 1024} MiB of JSON per manifest`;

export type SchemaSize = { readonly ok: true; readonly nodes: number } | { readonly ok: false; readonly problem: string };

const isContainer = (v: unknown): v is object => v !== null && typeof v === 'object';

/**
 * Walks one schema (iteratively, and before anything recursive such as JSON.stringify sees it: a hostile
 * nesting of thousands of levels cannot exhaust the stack) and measures it against the bounds.
 */
export function measureSchema(schema: Record<string, unknown>): SchemaSize {
  let nodes = 0;
  let properties = 0;
  const stack: { value: object; depth: number }[] = [{ value: schema, depth: 1 }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value, depth } = top;
    if (depth > MAX_SCHEMA_DEPTH) return { ok: false, problem: `nests objects and arrays deeper than ${MAX_SCHEMA_DEPTH} levels` };
    nodes += 1;
    if (nodes > MAX_SCHEMA_NODES) return { ok: false, problem: `has more than ${MAX_SCHEMA_NODES} objects and arrays (subschemas)` };
    const entries = Array.isArray(value) ? value.map((v): [string, unknown] => ['', v]) : Object.entries(value);
    for (const [key, child] of entries) {
      if ((key === 'properties' || key === 'patternProperties') && isContainer(child) && !Array.isArray(child)) {
        properties += Object.keys(child).length;
        if (properties > MAX_SCHEMA_PROPERTIES) return { ok: false, problem: `declares more than ${MAX_SCHEMA_PROPERTIES} properties` };
      }
      if (isContainer(child)) stack.push({ value: child, depth: depth + 1 });
    }
  }
  const chars = JSON.stringify(schema).length;
  if (chars > MAX_SCHEMA_CHARS) return { ok: false, problem: `is ${chars} characters of JSON; at most ${MAX_SCHEMA_CHARS} are allowed` };
  return { ok: true, nodes };
}

/** The first bound a manifest's schemas pass, as `<field> <problem>`, or null. */
export function manifestBoundsProblem(tools: readonly { readonly name: string; readonly input_schema: Record<string, unknown> }[]): string | null {
  let total = 0;
  for (const [i, tool] of tools.entries()) {
    const size = measureSchema(tool.input_schema);
    if (!size.ok) return `manifest.tools[${i}].input_schema (${tool.name}) ${size.problem} (${SCHEMA_BOUNDS_TEXT})`;
    total += size.nodes;
    if (total > MAX_MANIFEST_NODES) {
      return `manifest.tools[${i}].input_schema (${tool.name}) brings the manifest past ${MAX_MANIFEST_NODES} objects and arrays in all (${SCHEMA_BOUNDS_TEXT})`;
    }
  }
  // Last: every schema's depth is bounded by now, so serializing cannot recurse without end.
  const chars = JSON.stringify({ tools }).length;
  if (chars > MAX_MANIFEST_CHARS) return `manifest is ${chars} characters of JSON; at most ${MAX_MANIFEST_CHARS} are allowed (${SCHEMA_BOUNDS_TEXT})`;
  return null;
}
