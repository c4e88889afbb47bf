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
 */
import { createHash } from 'node:crypto';
import { Ajv } from 'ajv';
import { z } from 'zod';
import type { ExecTool } from '../../core/exec/agent-registry.js';
import type { Manifest } from './records.js';
import { requirementOf } from '../../schemas/issues.js';

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

// One instance for every enrollment: each compiled schema is removed again (ajv caches by schema object,
// and every enrollment parses new objects), and `addUsedSchema: false` keeps a `$id` from claiming a
// global name that the next manifest's tool could collide with.
const ajv = new Ajv({ strict: false, logger: false, addUsedSchema: false, allErrors: false });

/** Parses and checks an `enroll` message (already JSON-decoded). */
export function checkEnroll(raw: unknown): ManifestCheck {
  const parsed = enrollSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue ? renderPath(issue.path) : '';
    return { ok: false, message: `${path || 'the enroll message'} ${issue ? requirementOf(issue) : 'is invalid'}` };
  }
  const m = parsed.data;
  for (const [i, tool] of m.manifest.tools.entries()) {
    const problem = schemaProblem(tool.input_schema);
    if (problem) return { ok: false, message: `manifest.tools[${i}].input_schema (${tool.name}) ${problem}` };
  }
  const tools: ExecTool[] = m.manifest.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema, risk: t.risk, mcp_visible: t.mcp_visible }));
  return { ok: true, message: { registrationName: m.registration_name, description: m.description, workspaceIds: m.workspace_ids, manifest: { tools } } };
}

/** Why ajv cannot use the schema, or null. Arguments are always an object, so the top level must accept one. */
function schemaProblem(schema: Record<string, unknown>): string | null {
  if (schema.type !== undefined && schema.type !== 'object') return 'must describe an object (arguments are a JSON object): type must be "object" or absent';
  try {
    ajv.compile(schema);
    return null;
  } catch (err) {
    return `is not a usable JSON Schema: ${(err as Error).message}`;
  } finally {
    ajv.removeSchema(schema);
  }
}

/** JSON with every object's keys sorted, recursively; arrays keep their order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SPEC exec.agent_enrolled `manifest_hash`: `sha256:` + hex of the canonical JSON of the accepted manifest (defaults applied). */
export function manifestHash(manifest: Manifest): string {
  return `sha256:${createHash('sha256').update(canonicalJson(manifest)).digest('hex')}`;
}

function renderPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)), '');
}
