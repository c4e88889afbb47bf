/**
 * Responses and conversations (issue 14): rows, conversation items and their events, shared in PostgreSQL
 * (owned by this instance's row in its registry, whose beats cue the recovery of a dead sibling's), or in
 * SQLite on the busy connection with its outbox.
 */
import type { RouterChatServices } from '../app/chat/router-chat-services.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import type { StoredConversations } from '../core/store/responses-store.js';
import type { RouteDef } from '../http/server.js';
import { createResponsesSystem } from '../routes/responses.js';
import { createResponsesStore } from '../store/responses/responses-store.js';
import type { SharedReplicas } from './limits.js';
import type { BusyStore } from './store.js';

export interface ResponsesParts {
  readonly routes: RouteDef[];
  readonly conversations: StoredConversations;
  close(): Promise<void>;
}

export async function wireResponses(services: RouterChatServices, busy: BusyStore, shared: SharedReplicas | null, instanceId: string, recoveryCue: RecoveryCue): Promise<ResponsesParts> {
  const store = createResponsesStore({ ...busy.busySql, owner: shared ? shared.instances.id : instanceId, now: services.now });
  // Background responses fail "interrupted" if a stopped instance left any running (docs/decisions.md).
  const system = await createResponsesSystem({ ...services, ...store }, recoveryCue);
  return { routes: system.routes, conversations: store.conversations, close: () => system.close() };
}
