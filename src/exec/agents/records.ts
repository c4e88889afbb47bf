/** The stored records of the agents' side (store/exec-join-keys-repo.ts, store/exec-agents-repo.ts). Times: Unix ms. */
import type { ExecTool } from '../../core/exec/agent-registry.js';

export interface JoinKeyRecord {
  readonly id: string;
  readonly projectId: string;
  readonly name: string | null;
  readonly createdAt: number;
  readonly revokedAt: number | null;
}

export interface Manifest {
  readonly tools: readonly ExecTool[];
}

export interface AgentRecord {
  readonly id: string;
  readonly projectId: string;
  readonly registrationName: string;
  readonly description: string | null;
  /** Empty: every workspace of the project. */
  readonly workspaceIds: readonly string[];
  readonly joinKeyId: string;
  readonly manifest: Manifest;
  readonly manifestHash: string;
  readonly createdAt: number;
  readonly enrolledAt: number;
  /** As of the last enrollment or disconnection; an online agent's live value is in the registry. */
  readonly lastSeenAt: number;
  readonly updatedAt: number;
  readonly deletedAt: number | null;
}

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
