/**
 * The exec agents aggregate's storage port (issue 12): join keys and enrolled agents (docs/exec.md
 * "Concepts", "Management routes"). store/exec-agents/exec-agents-store.ts implements it once for SQLite and
 * PostgreSQL; test/contract/exec-agents-store-contract.ts runs it on both.
 *
 * Every write takes the events it emits (`agent.*`, `join_key.*`, `exec.agent_enrolled`) and commits them
 * with the row, in one transaction; a write that changes nothing (a key revoked twice, a name taken in
 * between by another replica's enrollment) writes no event. Reads and these guarded writes are all
 * enrollment needs: the partial unique index on live names decides between two replicas enrolling the
 * same name at once.
 */
import type { ExecTool } from '../exec/agent-registry.js';
import type { AgentRecord, JoinKeyRecord } from '../exec/agent-records.js';
import type { EventType } from '../webhooks/event-types.js';

export interface StoredEvent {
  readonly type: EventType;
  readonly data: Record<string, unknown>;
}

export interface ExecAgentsStore {
  insertJoinKey(record: JoinKeyRecord, keyHash: string, events: readonly StoredEvent[]): Promise<void>;
  /** Newest first, revoked ones too. */
  listJoinKeys(projectId: string): Promise<JoinKeyRecord[]>;
  findJoinKey(projectId: string, id: string): Promise<JoinKeyRecord | null>;
  findJoinKeyByHash(keyHash: string): Promise<JoinKeyRecord | null>;
  /** Sets revoked_at once, with the events; false (nothing written) when it was already set or no such key. */
  revokeJoinKey(projectId: string, id: string, at: number, events: readonly StoredEvent[]): Promise<boolean>;

  /** false (nothing written): the name is taken among the project's live agents. */
  insertAgent(record: AgentRecord, keyHash: string, events: readonly StoredEvent[]): Promise<boolean>;
  /** Not deleted, oldest first. */
  listAgents(projectId: string): Promise<AgentRecord[]>;
  /** Deleted ones too: invocations keep naming them. */
  findAgent(projectId: string, id: string): Promise<AgentRecord | null>;
  findAgentByHash(keyHash: string): Promise<AgentRecord | null>;
  /** The agent not deleted that holds the name in the project. */
  findLiveAgentByName(projectId: string, registrationName: string): Promise<AgentRecord | null>;
  /** A new enrollment of an existing agent (name, manifest, times); false (nothing written): the name is taken. */
  enrolled(record: AgentRecord, events: readonly StoredEvent[]): Promise<boolean>;
  /** Description and workspaces. */
  updateAgent(record: AgentRecord, events: readonly StoredEvent[]): Promise<void>;
  setAgentKeyHash(id: string, keyHash: string, at: number, events: readonly StoredEvent[]): Promise<void>;
  /** false (nothing written): already deleted. */
  softDeleteAgent(id: string, at: number, events: readonly StoredEvent[]): Promise<boolean>;
  /** Never moves last_seen_at back. */
  lastSeen(id: string, at: number): Promise<void>;
}

/** An agent online on some replica, as that replica published it (its socket is held there). */
export interface PresentAgent {
  readonly id: string;
  readonly projectId: string;
  readonly registrationName: string;
  readonly workspaceIds: readonly string[];
  readonly tools: readonly ExecTool[];
  /** The replica holding the agent's socket (its id in the instance registry). */
  readonly instanceId: string;
  readonly since: number;
}

/**
 * Which replica holds which agent's socket (PostgreSQL mode): published as agents attach and leave, read
 * by the others, so an invocation created through any replica finds a tool offered on another, and the
 * replica holding the agent is woken to dispatch it. Rows of replicas that left the instance registry
 * are not read: their agents are offline.
 */
export interface ExecPresence {
  attach(agent: Omit<PresentAgent, 'instanceId'>): Promise<void>;
  /** Only this replica's row: an agent that reconnected elsewhere in between stays present there. */
  detach(agentId: string): Promise<void>;
  setWorkspaces(agentId: string, workspaceIds: readonly string[]): Promise<void>;
  /** Agents held by the other live replicas. */
  elsewhere(): Promise<PresentAgent[]>;
  /** `fn` runs when another replica's agents came or left. */
  onChange(fn: () => void): () => void;
  /** Tells a replica that queued invocations wait for one of its agents. */
  wake(instanceId: string): Promise<void>;
  /** `fn` runs when another replica woke this one. */
  onWake(fn: () => void): () => void;
  /**
   * Tells the replica holding the agent's socket that the agent was changed through another replica:
   * deleted or its key rotated (its socket must close), or updated (its workspaces changed).
   */
  changed(agentId: string, what: AgentChange): Promise<void>;
  /** `fn` runs when another replica changed this agent (subscribed while this replica holds its socket). */
  onChanged(agentId: string, what: AgentChange, fn: () => void): () => void;
}

export type AgentChange = 'deleted' | 'rotated' | 'updated';
