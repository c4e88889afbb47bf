/**
 * The `enroll` message and its manifest (docs/exec.md "Agent protocol"): the envelope is checked by zod,
 * each tool's `input_schema` by ajv, which must compile it, since invocation arguments are validated
 * against it later. Anything wrong is `exec_manifest_invalid` (SPEC "Execution surface errors"), with a
 * message naming the field.
 *
 * ajv runs with `strict: false`: a manifest is written by someone else, for other tools too (MCP clients
 * read the same schemas), and annotations such as `examples`, `x-*` keywords or a `format` ajv does not
 * know are legitimate there; rejecting them would refuse working agents over documentation. What strict
 * mode would not catch either way, a schema that is not valid JSON Schema (`{"type": "strin"}`, a
 * `required` that is not an array, an unresolvable `$ref`), still fails to compile and is refused.
 *
 * Issue 31: the schemas are bounded (core/exec/schema-bounds.ts) before anything is compiled, and the
 * gateway compiles them on a schema thread (src/pool/schema-pool.ts): `parseEnroll` is the cheap part,
 * run on the event loop; `checkEnroll` adds the compile in-process, for the reference agent's own check.
 * Patterns must be ones the linear-time engine runs (core/exec/linear-regexp.ts).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ExecTool } from '../../core/exec/agent-registry.js';
import { manifestBoundsProblem } from '../../core/exec/schema-bounds.js';
import { canonicalJson, createSchemaCompiler, type SchemaCompiler } from '../../core/exec/schema-compiler.js';
import type { Manifest } from './records.js';
import { requirementOf } from '../../schemas/issues.js';
import { safeParseCut } from '../../schemas/long-arrays.js';

export const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;
export const REGISTRATION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const WORKSPACE_ID = /^ws_[0-9a-f]+$/;
export const MAX_TOOLS = 256;
export const MAX_DESCRIPTION = 1024;

const toolSchema = z.strictObject({
  name: z.string().regex(TOOL_NAME, 'must match ^[a-zA-Z0-9_.-]{1,64}$'),
  description: z.string().max(MAX_DESCRIPTION).default(''),
  input_schema: z.record(z.string(), z.unknown(), 'must be a JSON Schema object'),
  risk: z.enum(['read', 'write', 'destructive'], 'must be one of read, write, destructive'),
  mcp_visible: z.boolean().default(false),
});

const enrollSchema = z.strictObject({
  type: z.literal('enroll'),
  registration_name: z.string().regex(REGISTRATION_NAME, 'must be 1 to 128 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit'),
  description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
  workspace_ids: z.array(z.string().regex(WORKSPACE_ID, 'must be ws_<hex>')).max(256).optional(),
  manifest: z.strictObject({
    tools: z
      .array(toolSchema)
      .min(1, 'must list at least one tool')
      .max(MAX_TOOLS, `must list at most ${MAX_TOOLS} tools`)
      .superRefine((tools, ctx) => {
        const seen = new Set<string>();
        tools.forEach((t, i) => {
          if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `repeats the tool name ${t.name}` });
          seen.add(t.name);
        });
      }),
  }),
});

export interface EnrollMessage {
  readonly registrationName: string;
  readonly description: string | null | undefined;
  readonly workspaceIds: readonly string[] | undefined;
  readonly manifest: Manifest;
}

export type ManifestCheck = { readonly ok: true; readonly message: EnrollMessage } | { readonly ok: false; readonly message: string };

/** Parses an `enroll` message (already JSON-decoded) and checks the bounds of its schemas; compiles nothing. */
export function parseEnroll(raw: unknown): ManifestCheck {
  const parsed = safeParseCut(enrollSchema, raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue ? renderPath(issue.path) : '';
    if (issue?.code === 'unrecognized_keys') {
      // docs/exec.md: a refusal names the field; an unknown one is named itself, not its parent.
      const field = renderPath([...issue.path, String(issue.keys[0] ?? '')]);
      return { ok: false, message: `${field} is not a field of ${path || 'the enroll message'}` };
    }
    return { ok: false, message: `${path || 'the enroll message'} ${issue ? requirementOf(issue) : 'is invalid'}` };
  }
  const m = parsed.data;
  const tools: ExecTool[] = m.manifest.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema, risk: t.risk, mcp_visible: t.mcp_visible }));
  const bounds = manifestBoundsProblem(tools);
  if (bounds !== null) return { ok: false, message: bounds };
  return { ok: true, message: { registrationName: m.registration_name, description: m.description, workspaceIds: m.workspace_ids, manifest: { tools } } };
}

/** The refusal of the schema at `index` of the manifest, as the enroll refusal says it. */
export function schemaRefusal(tools: readonly ExecTool[], index: number, problem: string): string {
  return `manifest.tools[${index}].input_schema (${tools[index]?.name ?? '?'}) ${problem}`;
}

let inProcess: SchemaCompiler | null = null;

/** `parseEnroll`, then every schema compiled in this thread: for the reference agent, never the gateway's event loop. */
export function checkEnroll(raw: unknown): ManifestCheck {
  const parsed = parseEnroll(raw);
  if (!parsed.ok) return parsed;
  inProcess ??= createSchemaCompiler();
  const tools = parsed.message.manifest.tools;
  for (const [i, tool] of tools.entries()) {
    const problem = inProcess.check(tool.input_schema);
    if (problem !== null) return { ok: false, message: schemaRefusal(tools, i, problem) };
  }
  return parsed;
}

export { canonicalJson };

/** SPEC exec.agent_enrolled `manifest_hash`: `sha256:` + hex of the canonical JSON of the accepted manifest (defaults applied). */
export function manifestHash(manifest: Manifest): string {
  return `sha256:${createHash('sha256').update(canonicalJson(manifest)).digest('hex')}`;
}

function renderPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)), '');
}
