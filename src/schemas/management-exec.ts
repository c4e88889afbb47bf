/**
 * Wire schemas of the exec management routes (docs/exec.md "Management routes"). Bodies are strict, and
 * every refusal is SPEC's exec `invalid_body` (400: "Body failed JSON decoding or schema validation"),
 * with the field as `param`. Workspace ids are checked for form here and for existence by the route.
 */
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../json-body.js';
import { needs, parseStrictBody } from './issues.js';

export const MAX_JOIN_KEY_NAME = 128;
export const MAX_AGENT_DESCRIPTION = 1024;
const WORKSPACE_ID = /^ws_[0-9a-f]+$/;

const NAME_RULE = `must be a string of 1 to ${MAX_JOIN_KEY_NAME} characters, or null`;
const createJoinKeySchema = z.strictObject(
  { name: z.string(needs(NAME_RULE)).min(1, needs(NAME_RULE)).max(MAX_JOIN_KEY_NAME, needs(NAME_RULE)).nullable().optional() },
  needs('must be a JSON object'),
);

const DESCRIPTION_RULE = `must be a string of at most ${MAX_AGENT_DESCRIPTION} characters, or null`;
const WORKSPACES_RULE = 'must be an array of distinct workspace ids (ws_<hex>); empty: every workspace of the project';
const patchAgentSchema = z.strictObject(
  {
    description: z.string(needs(DESCRIPTION_RULE)).max(MAX_AGENT_DESCRIPTION, needs(DESCRIPTION_RULE)).nullable().optional(),
    workspace_ids: z
      .array(z.string(needs(WORKSPACES_RULE)), needs(WORKSPACES_RULE))
      .max(256, needs(WORKSPACES_RULE))
      .refine((ids) => new Set(ids).size === ids.length, needs(WORKSPACES_RULE))
      .optional(),
  },
  needs('must be a JSON object'),
);

export type CreateJoinKeyBody = z.infer<typeof createJoinKeySchema>;
export type PatchAgentBody = z.infer<typeof patchAgentSchema>;

/** The body as JSON; an empty body is `{}` where every field is optional. JSON errors are `invalid_body` too (SPEC exec table). */
export function execBody(buf: Buffer): unknown {
  if (buf.length === 0) return {};
  try {
    return parseJsonBody(buf);
  } catch (err) {
    if (err instanceof GatewayError) throw new GatewayError('invalid_body', { message: err.message });
    throw err;
  }
}


export const parseCreateJoinKey = (body: unknown): CreateJoinKeyBody => parseStrictBody(createJoinKeySchema, body, ['name'], { code: 'invalid_body' });
export const parsePatchAgent = (body: unknown): PatchAgentBody => parseStrictBody(patchAgentSchema, body, ['description', 'workspace_ids'], { code: 'invalid_body' });

/** Each id's form (400 invalid_workspace_id) then its existence in the project (404 workspace_not_found). */
export function checkWorkspaceIds(ids: readonly string[], known: ReadonlyMap<string, unknown>, projectId: string): void {
  ids.forEach((id, i) => {
    if (!WORKSPACE_ID.test(id)) {
      throw new GatewayError('invalid_workspace_id', { param: `workspace_ids[${i}]`, message: `workspace_ids[${i}] ${JSON.stringify(id).slice(0, 80)} is not a workspace id: workspace ids have the form ws_<hex>.` });
    }
    if (!known.has(id)) throw new GatewayError('workspace_not_found', { param: `workspace_ids[${i}]`, message: `Project ${projectId} has no workspace ${id}.` });
  });
}
