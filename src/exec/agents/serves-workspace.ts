/**
 * Whether an agent serves a workspace, the one rule both registries apply: an agent enrolled for no
 * workspace serves all of them, and a request naming no workspace may go to any agent of its project.
 */
export const servesWorkspace = (agent: { readonly workspaceIds: readonly string[] }, workspaceId: string | null): boolean =>
  workspaceId === null || agent.workspaceIds.length === 0 || agent.workspaceIds.includes(workspaceId);
