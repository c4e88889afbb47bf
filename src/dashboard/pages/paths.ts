/** Where the operator pages live: `/dashboard/projects/{project_id}/{section}` (docs/decisions.md "Dashboard pages"). */

export const PROJECTS_PATH = '/dashboard/projects';
export const STYLESHEET_PATH = '/dashboard/assets/dashboard.css';

export const SECTIONS = ['overview', 'keys', 'router', 'webhooks', 'usage', 'requests', 'endpoints', 'approvals', 'members', 'playground'] as const;
export type Section = (typeof SECTIONS)[number];

export const SECTION_TITLES: Record<Section, string> = {
  overview: 'Overview',
  keys: 'API keys',
  router: 'Semantic router',
  webhooks: 'Webhooks',
  usage: 'Usage and cost',
  requests: 'Requests',
  endpoints: 'Endpoints and models',
  approvals: 'Approvals',
  members: 'Members',
  playground: 'Playground',
};

/** A project's page; ids are ours (`proj_`, `ws_`, `key_` ...) but are still URI-encoded. */
export function projectPath(projectId: string, section: Section = 'overview', ...rest: string[]): string {
  const base = `${PROJECTS_PATH}/${encodeURIComponent(projectId)}`;
  const tail = [...(section === 'overview' ? [] : [section]), ...rest.map(encodeURIComponent)];
  return tail.length === 0 ? base : `${base}/${tail.join('/')}`;
}
