/**
 * What the semantic router's chat turns need besides a direct turn's (routes/semantic-router-chat.ts, and
 * the multimodel dispatches that route each sub-task, app/multimodel/).
 */
import type { SemanticRouter } from '../../router/semantic-router.js';
import type { DecisionLog } from '../../store/decision-log.js';
import { resolveWorkspace, type AuthenticatedKey } from '../../core/auth/authenticate.js';
import type { WorkspaceChoice } from '../endpoint-access.js';
import type { Services } from '../services.js';
import type { ChatServices } from './chat-dispatch.js';

export interface RouterChatServices extends ChatServices {
  readonly router: SemanticRouter;
  readonly decisionLog: DecisionLog;
  readonly routerId: string;
}

export interface RouterWorkspace {
  /** null: project-wide (a key with no user and no list, in a project without a default workspace). */
  readonly workspaceId: string | null;
  /** Who named it: `workspace_id` (path), `X-Workspace-Id`, `X-Service-Workspace`, or '' when nothing did. */
  readonly namedBy: string;
  /** Named by the request, or imposed by the key's workspace list: the request may reach nothing outside it. */
  readonly confined: boolean;
}

/**
 * The workspace every request on a router base URL runs in (chat, models, embeddings), so that a listing
 * or an embedding made with the same URL, key and headers as a turn sees the turn's workspace.
 */
export function routerWorkspaceOf(services: Services, auth: AuthenticatedKey, choice: WorkspaceChoice): RouterWorkspace {
  const { named, namedBy } = choice;
  const workspaceId = resolveWorkspace(auth.key, auth.project, { named, namedBy, workspaces: services.catalog.workspaces(auth.project.id), workspaceProject: services.catalog.workspaceProject });
  return { workspaceId, namedBy, confined: named !== null || auth.key.allowedWorkspaceIds !== null };
}
