/**
 * The exec invocations aggregate's storage port (issue 12): invocations, their approvals and the
 * Idempotency-Key records (docs/exec.md "Invocations", "Approvals", "Durability").
 * store/exec-invocations/exec-invocations-store.ts implements it once for SQLite and PostgreSQL;
 * test/contract/exec-invocations-store-contract.ts runs it on both.
 *
 * Several replicas act on the same rows, each on what it read a moment before, so every state change is
 * guarded by the state it was computed from (an invocation's status; an approval's state and stage):
 * statuses and stages only move forward, so a write whose guard no longer holds changes nothing and writes
 * no event, and its caller learns it lost. The events (`exec.*`) commit with the change.
 *
 * A dispatched or running invocation records the instance that dispatched it (`owner_instance`): only
 * that instance holds its agent's socket; recovery fails it once that instance left the instance
 * registry (`gateway_instances`).
 */
import type { Approval } from '../exec/approval-machine.js';
import type { ExecEvent } from '../exec/exec-events.js';
import type { Invocation, InvocationStatus } from '../exec/invocation-machine.js';

export interface IdempotencyRecord {
  readonly key: string;
  readonly bodyHash: string;
  /** When the key may name a new invocation (24 h after its first use). */
  readonly expiresAt: number;
}

export type CreateOutcome =
  | { readonly kind: 'created' }
  | { readonly kind: 'replayed'; readonly invocation: Invocation }
  | { readonly kind: 'conflict' };

export interface PageQuery {
  readonly limit: number;
  /** The id of the last item of the previous page. */
  readonly after: string | null;
  /** An invocation's status or an approval's state. */
  readonly status: string | null;
  /** null: every workspace. */
  readonly workspaceIds: readonly string[] | null;
}

export interface Page<T> {
  readonly items: T[];
  readonly hasMore: boolean;
}

/**
 * A state change to commit: the records' new states, each with the state it was read in (the guard), and
 * the events the change emits.
 */
export interface Change {
  readonly projectId: string;
  readonly invocation: { readonly from: InvocationStatus; readonly to: Invocation } | null;
  readonly approval: { readonly from: Approval; readonly to: Approval } | null;
  readonly events: readonly ExecEvent[];
}

/** `claimed`: dispatched by us and sent; `taken`: another writer changed it first; `unsent`: the agent was gone. */
export type ClaimOutcome = 'claimed' | 'taken' | 'unsent';

export interface Sequenced {
  readonly seq: number;
  readonly invocation: Invocation;
}

export interface ExecInvocationsStore {
  /**
   * The new invocation (and its approval) with its events, unless the Idempotency-Key is already held:
   * then the first invocation for the same body, a conflict for another.
   */
  create(inv: Invocation, approval: Approval | null, events: readonly ExecEvent[], idem: IdempotencyRecord | null, now: number): Promise<CreateOutcome>;
  /** A held key, if it has not expired: to answer a replay before anything else is checked. */
  idempotencyKey(projectId: string, key: string, now: number): Promise<{ bodyHash: string; invocationId: string } | null>;
  /** The change with its events if every record is still in the state it was read in; false (nothing written) otherwise. */
  commit(change: Change): Promise<boolean>;
  /**
   * queued -> dispatched for this instance, then `send` (the message to the agent), in one transaction:
   * the loser of a race for the row never sends, and a send that fails undoes the claim.
   */
  claim(change: Change, send: () => boolean): Promise<ClaimOutcome>;
  invocation(id: string): Promise<Invocation | null>;
  approval(id: string): Promise<Approval | null>;
  /** Newest first; null when `after` names no invocation of the project. */
  listInvocations(projectId: string, q: PageQuery): Promise<Page<Invocation> | null>;
  listApprovals(projectId: string, q: PageQuery): Promise<Page<Approval> | null>;
  /** Invocations whose deadline has come (queued, dispatched or running). */
  dueInvocations(now: number, limit: number): Promise<Invocation[]>;
  /** Pending approvals whose current stage has lapsed. */
  dueApprovals(now: number, limit: number): Promise<Approval[]>;
  /** In creation order, from after `afterSeq`. */
  withStatus(status: InvocationStatus, afterSeq: number, limit: number): Promise<Sequenced[]>;
  /**
   * Recovery: one batch of dispatched or running invocations whose owner instance is gone, each changed by
   * `fail` (null: left alone), in one transaction, so two replicas recovering at once fail each once.
   * Returns the batch read (its last seq is the next call's `afterSeq`).
   */
  failAbandoned(status: 'dispatched' | 'running', afterSeq: number, limit: number, fail: (inv: Invocation) => Change | null): Promise<Sequenced[]>;
  activeOfAgent(agentId: string): Promise<Invocation[]>;
  /** The stored status (and agent) of each of these invocations: what other replicas did to them. */
  statusesOf(ids: readonly string[]): Promise<{ id: string; status: InvocationStatus; agentId: string | null }[]>;
  dropExpiredKeys(now: number): Promise<number>;
}
