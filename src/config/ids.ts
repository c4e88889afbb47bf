/**
 * Ids the config file may leave out. An endpoint or workspace without an `id` gets one derived from what
 * identifies it in the file, so every start derives the same one: the store's rows, and what hangs off
 * them by id (pinned endpoints, the router's fallback and rules, budgets, keys bound to an endpoint or
 * confined to workspaces), survive restarts.
 *   endpoint:  UUIDv5 (RFC 9562 §5.5) of `<project id>/<slug>` under SWITCHBOARD_ENDPOINT_NAMESPACE. Slugs
 *              are unique among a project's endpoints and project ids are global, so two entries never
 *              share the input; endpoint ids are global in the store, hence the project in the input.
 *   workspace: `ws_` + the first 24 hex digits (96 bits) of SHA-256 of `<project id>/<name>`. Workspace ids
 *              are per project in the store; names must then differ among the id-less ones.
 * A project id never holds `/` (project.ts: proj_ and letters and digits), so the input splits one way only.
 * The cost: renaming a slug or a workspace name makes a new id (the old endpoint is marked deleted, as when
 * an id changes). Entries whose names may change should keep an explicit id; an explicit id always wins.
 *
 * References inside the file (`default_workspace`, an endpoint's `workspaces`, a key's
 * `allowed_workspace_ids`) may name a workspace by id or by name, and a key's `endpoint_id` an endpoint by
 * id or slug: an id-less entry has no id to write there. They are all ids once the file is parsed.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { DeclaredProject } from './project.js';

/** Fixed forever: changing it would change every derived endpoint id. */
export const SWITCHBOARD_ENDPOINT_NAMESPACE = '6f1c9a52-3d7e-4b0a-9e65-8a2f4c1d7b39';

export function endpointIdFor(projectId: string, slug: string): string {
  return uuidV5(`${projectId}/${slug}`, SWITCHBOARD_ENDPOINT_NAMESPACE);
}

export function workspaceIdFor(projectId: string, name: string): string {
  return `ws_${createHash('sha256').update(`${projectId}/${name}`, 'utf8').digest('hex').slice(0, 24)}`;
}

/** Exported for its test vector (RFC 9562 appendix A.4). */
export function uuidV5(name: string, namespace: string): string {
  const digest = createHash('sha1').update(Buffer.from(namespace.replace(/-/g, ''), 'hex')).update(name, 'utf8').digest();
  const bytes = digest.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50; // version 5
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // RFC variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Before deriving: id-less entries whose inputs would collide, and references by a name two workspaces
 * share. A failure here stops the project's other checks (zod skips what follows), so each message says
 * what to change.
 */
export function checkDerivableIds(p: DeclaredProject, ctx: z.RefinementCtx): void {
  const issue = (path: (string | number)[], message: string): void => {
    ctx.addIssue({ code: 'custom', path, message });
  };
  const seen = new Map<string, number>();
  p.workspaces.forEach((w, i) => {
    if (w.id !== undefined) return;
    const first = seen.get(w.name);
    if (first === undefined) seen.set(w.name, i);
    else issue(['workspaces', i, 'name'], `is also the name of workspaces[${first}], and neither has an id: give one an id or another name`);
  });
  const ids = new Set(p.workspaces.map((w) => w.id));
  const nameCount = new Map<string, number>();
  for (const w of p.workspaces) nameCount.set(w.name, (nameCount.get(w.name) ?? 0) + 1);
  const checkRef = (ref: string, path: (string | number)[]): void => {
    if (!ids.has(ref) && (nameCount.get(ref) ?? 0) > 1) issue(path, `names ${ref}, the name of more than one workspace: use the workspace's id`);
  };
  if (p.default_workspace) checkRef(p.default_workspace, ['default_workspace']);
  p.endpoints.forEach((e, i) => (e.workspaces ?? []).forEach((w, j) => checkRef(w, ['endpoints', i, 'workspaces', j])));
  p.keys.forEach((k, i) => (k.allowed_workspace_ids ?? []).forEach((w, j) => checkRef(w, ['keys', i, 'allowed_workspace_ids', j])));
}

/** The project with every id filled in and every reference turned into an id (unknown ones are left as written, for the reference check). */
export function withDerivedIds(p: DeclaredProject) {
  const workspaces = p.workspaces.map((w) => ({ ...w, id: w.id ?? workspaceIdFor(p.id, w.name) }));
  const endpoints = p.endpoints.map((e) => ({ ...e, id: e.id ?? endpointIdFor(p.id, e.slug) }));
  const workspaceIds = new Set(workspaces.map((w) => w.id));
  const workspaceByName = new Map(workspaces.map((w) => [w.name, w.id]));
  const workspace = (ref: string): string => (workspaceIds.has(ref) ? ref : (workspaceByName.get(ref) ?? ref));
  const endpointIds = new Set(endpoints.map((e) => e.id));
  const endpointBySlug = new Map(endpoints.map((e) => [e.slug, e.id]));
  const endpoint = (ref: string): string => (endpointIds.has(ref) ? ref : (endpointBySlug.get(ref) ?? ref));
  return {
    ...p,
    default_workspace: p.default_workspace ? workspace(p.default_workspace) : p.default_workspace,
    workspaces,
    endpoints: endpoints.map((e) => ({ ...e, workspaces: e.workspaces?.map(workspace) })),
    keys: p.keys.map((k) => ({
      ...k,
      endpoint_id: k.endpoint_id === undefined ? undefined : endpoint(k.endpoint_id),
      allowed_workspace_ids: k.allowed_workspace_ids?.map(workspace),
    })),
  };
}

export type ProjectWithIds = ReturnType<typeof withDerivedIds>;
