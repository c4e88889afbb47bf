/**
 * A project of the config file: its workspaces, endpoints and bootstrap keys, with the checks that its
 * references (default workspace, an endpoint's workspaces, a key's endpoint and workspaces) name entries of
 * the same project. Ids the file leaves out are derived in ids.ts.
 */
import { z } from 'zod';
import { KEY_VALUE_PATTERN } from '../core/auth/key-token.js';
import { SCOPES } from '../core/auth/scopes.js';
import { ipOrCidrSchema } from '../core/auth/ip-filter.js';
import { budgetSchema, duplicates, endpointSchema, SLUG, workspaceRef } from './endpoint.js';
import { checkDerivableIds, withDerivedIds, type ProjectWithIds } from './ids.js';
import { isoTimestamp } from './iso-timestamp.js';

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;
const PROJECT_ID = /^proj_[A-Za-z0-9]+$/;

const keySchema = z.strictObject({
  value: z.string().regex(KEY_VALUE_PATTERN, 'must be svc_<slug>_<43 base64url characters>'),
  name: z.string().optional(),
  scopes: z.array(z.enum(SCOPES)).min(1).default(['inference']),
  allowed_ips: z.array(ipOrCidrSchema).default([]),
  blocked_ips: z.array(ipOrCidrSchema).default([]),
  expires_at: isoTimestamp.optional(),
  quota_requests: z.number().int().min(0).default(0),
  quota_window: z.number().int().positive().default(60),
  /** An endpoint of the project by id or slug. */
  endpoint_id: z.string().min(1).optional(),
  allowed_workspace_ids: z.array(workspaceRef).min(1, 'must not be empty').optional(),
});

const workspaceSchema = z.strictObject({
  /** Omitted: derived from the project id and the name, the same at every start (ids.ts). */
  id: z.string().regex(WORKSPACE_ID, 'must be ws_<hex>').optional(),
  name: z.string().min(1),
  routing_mode: z.enum(['semantic', 'concrete']).nullable().default(null),
  zero_data_retention: z.boolean().default(false),
  /** Operational workspaces run exec traffic; one may never be the project default (SPEC Authentication 10). */
  operational: z.boolean().default(false),
  budget: budgetSchema.optional(),
  /** Execution surface (docs/exec.md): who approves destructive invocations, and what else needs approval. */
  exec: z
    .strictObject({
      /** Tools that wait for an approval although their manifest risk is not `destructive`. */
      approval_required_tools: z.array(z.string().min(1)).default([]),
      /** Escalation stages: each stage's target has `timeout_ms` to decide before the next takes over. */
      approval_chain: z
        .array(z.strictObject({ target: z.string().min(1), timeout_ms: z.number().int().positive() }))
        .min(1)
        .default([{ target: 'operators', timeout_ms: 15 * 60 * 1000 }]),
    })
    .prefault({}),
});

const projectSchemaBase = z.strictObject({
    id: z.string().regex(PROJECT_ID, 'must be proj_<id>'),
    slug: z.string().regex(SLUG, 'must be lowercase letters, digits and dashes'),
    name: z.string().min(1).optional(),
    plan: z.enum(['free', 'paid']).default('paid'),
    rate_limit: z
      .strictObject({
        requests_per_minute: z.number().int().min(0).default(1024),
        tokens_per_minute: z.number().int().min(0).default(2_097_152),
      })
      .default({ requests_per_minute: 1024, tokens_per_minute: 2_097_152 }),
    default_workspace: workspaceRef.nullable().optional(),
    workspaces: z.array(workspaceSchema).default([]),
    endpoints: z.array(endpointSchema).default([]),
    keys: z.array(keySchema).default([]),
});
/** The project as written: endpoint and workspace ids may be missing (ids.ts fills them in). */
export type DeclaredProject = z.infer<typeof projectSchemaBase>;
export const projectSchema = projectSchemaBase.superRefine(checkDerivableIds).transform(withDerivedIds).superRefine(checkProjectReferences);

function checkProjectReferences(p: ProjectWithIds, ctx: z.RefinementCtx): void {
  const workspaceIds = new Set(p.workspaces.map((w) => w.id));
  const issue = (path: (string | number)[], message: string): void => {
    ctx.addIssue({ code: 'custom', path, message });
  };
  if (p.default_workspace && !workspaceIds.has(p.default_workspace)) {
    issue(['default_workspace'], `names ${p.default_workspace}, which is not in workspaces`);
  }
  if (p.workspaces.some((w) => w.id === p.default_workspace && w.operational)) {
    issue(['default_workspace'], `names ${p.default_workspace}, an operational workspace, which cannot be the default`);
  }
  duplicates(p.workspaces.map((w) => w.id)).forEach((i) => issue(['workspaces', i, 'id'], 'is a duplicate'));
  duplicates(p.endpoints.map((e) => e.slug)).forEach((i) => issue(['endpoints', i, 'slug'], 'is a duplicate'));
  duplicates(p.endpoints.map((e) => e.id)).forEach((i) => issue(['endpoints', i, 'id'], 'is a duplicate'));
  duplicates(p.keys.map((k) => k.value)).forEach((i) => issue(['keys', i, 'value'], 'is a duplicate'));
  p.endpoints.forEach((e, i) =>
    (e.workspaces ?? []).forEach((w, j) => {
      if (!workspaceIds.has(w)) issue(['endpoints', i, 'workspaces', j], `names ${w}, which is not in workspaces`);
    }),
  );
  const endpointIds = new Set(p.endpoints.map((e) => e.id));
  p.keys.forEach((k, i) => {
    if (!k.value.startsWith(`svc_${p.slug}_`) && !k.value.startsWith('svc_mgmt_')) {
      issue(['keys', i, 'value'], `must start with svc_${p.slug}_ (the project slug)`);
    }
    if (k.endpoint_id && !endpointIds.has(k.endpoint_id)) issue(['keys', i, 'endpoint_id'], 'names no endpoint of the project');
    (k.allowed_workspace_ids ?? []).forEach((w, j) => {
      if (!workspaceIds.has(w)) issue(['keys', i, 'allowed_workspace_ids', j], `names ${w}, which is not in workspaces`);
    });
    if (k.allowed_workspace_ids && k.scopes.includes('management')) {
      issue(['keys', i, 'allowed_workspace_ids'], 'cannot be combined with the management scope');
    }
  });
}

