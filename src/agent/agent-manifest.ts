/**
 * The reference agent's manifest file (docs/exec.md "Reference agent"): YAML, `tools` mapping each tool
 * name to its command (an argv template, see argv-template.ts) and what the gateway publishes of it. The
 * part sent to the gateway is checked here with the gateway's own enrollment check (manifest.ts), so a
 * manifest the gateway would refuse fails at start, with the field named, instead of in a reconnect loop.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatZodIssues } from '../core/zod-issue-lines.js';
import type { ExecTool } from '../core/exec/agent-registry.js';
import { checkEnroll } from '../exec/agents/manifest.js';
import { placeholders } from './argv-template.js';

const toolSchema = z.strictObject({
  command: z.array(z.string()).min(1, 'must name the program: [program, arg, ...]'),
  description: z.string().default(''),
  risk: z.enum(['read', 'write', 'destructive']),
  timeout_ms: z.number().int().positive().max(3_600_000).default(60_000),
  output_cap_bytes: z.number().int().min(1).default(64 * 1024),
  mcp_visible: z.boolean().default(false),
  input_schema: z.record(z.string(), z.unknown()).default({ type: 'object' }),
});

const fileSchema = z.strictObject({
  name: z.string().optional(),
  description: z.string().optional(),
  workspace_ids: z.array(z.string()).optional(),
  tools: z.record(z.string(), toolSchema),
});

export interface AgentTool extends ExecTool {
  readonly command: readonly string[];
  readonly timeoutMs: number;
  readonly outputCapBytes: number;
}

export interface AgentManifest {
  readonly name: string | undefined;
  readonly description: string | undefined;
  readonly workspaceIds: readonly string[] | undefined;
  readonly tools: ReadonlyMap<string, AgentTool>;
}

export class ManifestFileError extends Error {}

export function loadAgentManifest(path: string): AgentManifest {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ManifestFileError(`${path}: ${(err as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new ManifestFileError(`${path}: ${formatZodIssues(parsed.error.issues)}`);
  const tools = new Map<string, AgentTool>();
  for (const [name, t] of Object.entries(parsed.data.tools)) {
    tools.set(name, {
      name,
      description: t.description,
      input_schema: t.input_schema,
      risk: t.risk,
      mcp_visible: t.mcp_visible,
      command: t.command,
      timeoutMs: t.timeout_ms,
      outputCapBytes: t.output_cap_bytes,
    });
  }
  return { name: parsed.data.name, description: parsed.data.description, workspaceIds: parsed.data.workspace_ids, tools };
}

/** The `enroll` message for this manifest, checked as the gateway will check it. */
export function enrollMessage(manifest: AgentManifest, registrationName: string): Record<string, unknown> {
  const message = {
    type: 'enroll',
    registration_name: registrationName,
    ...(manifest.description === undefined ? {} : { description: manifest.description }),
    ...(manifest.workspaceIds === undefined ? {} : { workspace_ids: manifest.workspaceIds }),
    manifest: {
      tools: [...manifest.tools.values()].map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema, risk: t.risk, mcp_visible: t.mcp_visible })),
    },
  };
  const check = checkEnroll(message);
  if (!check.ok) throw new ManifestFileError(`the manifest would be refused (exec_manifest_invalid): ${check.message}`);
  for (const t of manifest.tools.values()) {
    const declared = (t.input_schema as { properties?: Record<string, unknown> }).properties ?? {};
    const missing = placeholders(t.command).find((p) => !Object.hasOwn(declared, p));
    if (missing !== undefined) throw new ManifestFileError(`tools.${t.name}.command uses {{${missing}}}, which input_schema.properties does not declare`);
  }
  return message;
}
