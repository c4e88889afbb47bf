/** The synchronous store interfaces of the agents' side (store/exec-join-keys-repo.ts, store/exec-agents-repo.ts); the records are core's. */
import type { AgentRecord, JoinKeyRecord } from '../../core/exec/agent-records.js';

export type { AgentRecord, JoinKeyRecord, Manifest } from '../../core/exec/agent-records.js';

/** What the agents' side needs of the store (store/exec-join-keys-repo.ts implements it). */
export interface JoinKeysStore {
  insert(record: JoinKeyRecord, keyHash: string): void;
  /** Newest first, revoked ones too. */
  list(projectId: string): JoinKeyRecord[];
  find(projectId: string, id: string): JoinKeyRecord | null;
  findByHash(keyHash: string): JoinKeyRecord | null;
  /** Sets revoked_at once; false when it was already set (or no such key). */
  revoke(projectId: string, id: string, at: number): boolean;
}

/** What the agents' side needs of the store (store/exec-agents-repo.ts implements it). */
export interface AgentsStore {
  /** false: the name is taken among the project's live agents (by another process's enrollment). */
  insert(record: AgentRecord, keyHash: string): boolean;
  /** Not deleted, oldest first. */
  list(projectId: string): AgentRecord[];
  /** Deleted ones too: invocations keep naming them. */
  find(projectId: string, id: string): AgentRecord | null;
  findByHash(keyHash: string): AgentRecord | null;
  /** The agent not deleted that holds the name in the project. */
  findLiveByName(projectId: string, registrationName: string): AgentRecord | null;
  /** A new enrollment of an existing agent (name, manifest, times); false: the name is taken. */
  enrolled(record: AgentRecord): boolean;
  /** Description and workspaces. */
  update(record: AgentRecord): void;
  setKeyHash(id: string, keyHash: string, at: number): void;
  softDelete(id: string, at: number): void;
  lastSeen(id: string, at: number): void;
}
