/**
 * The storage port of stored responses and conversations (issues 12 and 14): one aggregate, since a
 * response appends its items to its conversation in the transaction that stores it. Implemented once
 * for SQLite and PostgreSQL (store/responses/); test/contract/responses-store-contract.ts runs both.
 *
 * Every state change commits with its webhook event (`response.completed` / `response.failed`,
 * `conversation.created` / `conversation.deleted`) in the same transaction. Not on the chat completions
 * path: the Responses and Conversations routes await it.
 *
 * A background response (routes/responses-background.ts) is a row from its creation, `queued`, then
 * `in_progress`, then finished by an update that only a still running row takes (a cancelled one keeps
 * `cancelled`). Each row records the gateway instance that runs it: recovery fails only the running rows
 * whose instance is no longer registered (`abandoned`), never a live sibling's.
 */

export type Item = Record<string, unknown>;

export interface StoredResponse {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly previousResponseId: string | null;
  readonly status: string;
  readonly input: Item[];
  readonly body: Record<string, unknown>;
}

export interface ResponseRecord {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly previousResponseId: string | null;
  readonly conversationId: string | null;
  readonly status: string;
  readonly input: readonly Item[];
  readonly body: Record<string, unknown>;
  /** `body` as JSON text, when its writer serialized it already (for the answer): stored as it is. */
  readonly bodyJson?: string;
  readonly createdAt: number;
}

export interface ResponseFinish {
  /** Stored (retrievable); null: `store: false`, only the event and the conversation append happen. */
  readonly store: ResponseRecord | null;
  readonly projectId: string;
  readonly responseId: string;
  readonly failed: boolean;
  /** A background response: its row exists and is updated, only while it is still running. */
  readonly background: boolean;
  /** Items appended to this conversation (the new input then the output), when the response used one. */
  readonly conversation: { readonly id: string; readonly items: readonly Item[]; readonly createdAt: number } | null;
}

export interface RunningFailure {
  readonly code: string;
  readonly message: string;
}

/**
 * `abandoned`: the running background responses of gateway instances that are no longer registered (at
 * start, and when a sibling is found dead); `mine`: this instance's (at a graceful stop).
 */
export type RunningOwners = 'abandoned' | 'mine';

export interface StoredResponses {
  get(projectId: string, id: string): Promise<StoredResponse | null>;
  /** Finishes a response: row, conversation append and event commit together. */
  finish(f: ResponseFinish): Promise<void>;
  delete(projectId: string, id: string): Promise<boolean>;
  /** A background response's row, `queued`, owned by this instance, before its turn starts (no event). */
  queue(record: ResponseRecord): Promise<void>;
  /** Moves a running (queued or in-progress) background response to `status`; false: it was not running. */
  transition(projectId: string, id: string, status: string, body: Record<string, unknown>): Promise<boolean>;
  /**
   * Running background responses of `whose` fail with `error`, each with its response.failed event
   * (docs/decisions.md "Background responses"). Returns how many.
   */
  failRunning(error: RunningFailure, whose: RunningOwners): Promise<number>;
  /**
   * `listener` runs when a running background response may have been cancelled or deleted through
   * another instance (PostgreSQL: a change notice), so the instance running its turn aborts it; it then
   * reads the rows of its runs. Never called with SQLite, whose single instance cancels its own runs.
   * Returns the unsubscribe function.
   */
  watchCancels(listener: () => void): () => void;
}

export interface ConversationRecord {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly metadata: Record<string, string>;
  readonly createdAt: number;
}

export interface ItemPage {
  readonly items: Item[];
  readonly hasMore: boolean;
}

export interface ItemQuery {
  readonly limit: number;
  /** An item id; items after it in `order`. */
  readonly after: string | null;
  readonly order: 'asc' | 'desc';
}

export interface StoredConversations {
  /** The conversation, its first items and conversation.created, together. */
  create(c: ConversationRecord, items: readonly Item[]): Promise<void>;
  get(projectId: string, id: string): Promise<ConversationRecord | null>;
  updateMetadata(projectId: string, id: string, metadata: Record<string, string>): Promise<boolean>;
  /** The conversation, its items and conversation.deleted, together; false when there was none. */
  delete(projectId: string, id: string): Promise<boolean>;
  addItems(conversationId: string, items: readonly Item[], createdAt: number): Promise<void>;
  /** Items in insertion order; null when `after` names no item of the conversation. */
  listItems(conversationId: string, query: ItemQuery): Promise<ItemPage | null>;
  countItems(conversationId: string): Promise<number>;
  /** The newest `limit` items (all when null), oldest first: a response's context. */
  contextItems(conversationId: string, limit: number | null): Promise<Item[]>;
  getItem(conversationId: string, itemId: string): Promise<Item | null>;
  deleteItem(conversationId: string, itemId: string): Promise<boolean>;
}

export interface ResponsesStore {
  readonly responses: StoredResponses;
  readonly conversations: StoredConversations;
}
