/**
 * MCP sessions (`Mcp-Session-Id`), in this process's memory (docs/mcp.md "Sessions"): each is one SDK
 * `Server` with its transport, owned by the API key that initialized it. A request naming a session of
 * another key, or one this process does not hold (ended, idle too long, another process's, before a
 * restart), is answered 404 and the client initializes again, as the transport specification says.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

export interface McpSession {
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly projectId: string;
  readonly keyId: string;
  lastUsedAt: number;
}

export interface McpSessionLimits {
  /** A session unused for this long is closed. */
  readonly idleMs: number;
  /** Sessions held at once; past it the least recently used is closed. */
  readonly maxSessions: number;
}

export const DEFAULT_SESSION_LIMITS: McpSessionLimits = { idleMs: 30 * 60 * 1000, maxSessions: 10_000 };

export class McpSessions {
  /** Insertion order is use order: a used session is moved to the end. */
  readonly #byId = new Map<string, McpSession>();
  readonly #limits: McpSessionLimits;
  readonly #now: () => number;

  constructor(now: () => number, limits: McpSessionLimits = DEFAULT_SESSION_LIMITS) {
    this.#now = now;
    this.#limits = limits;
  }

  get size(): number {
    return this.#byId.size;
  }

  add(id: string, session: McpSession): void {
    this.#byId.set(id, session);
    while (this.#byId.size > this.#limits.maxSessions) {
      const oldest = this.#byId.keys().next().value;
      if (oldest === undefined) break;
      this.close(oldest);
    }
  }

  /** The session, when it exists and belongs to this key of this project. */
  use(id: string, projectId: string, keyId: string): McpSession | null {
    const s = this.#byId.get(id);
    if (!s || s.projectId !== projectId || s.keyId !== keyId) return null;
    s.lastUsedAt = this.#now();
    this.#byId.delete(id);
    this.#byId.set(id, s);
    return s;
  }

  /** Forgets the session (the transport ended it: DELETE); no close of the transport. */
  forget(id: string): void {
    this.#byId.delete(id);
  }

  close(id: string): void {
    const s = this.#byId.get(id);
    this.#byId.delete(id);
    if (s) void s.server.close().catch(() => undefined);
  }

  /** Closes the sessions idle for longer than the limit (run every minute). */
  sweep(): void {
    const cutoff = this.#now() - this.#limits.idleMs;
    for (const [id, s] of this.#byId) {
      // Use order: the first one used recently enough ends the scan.
      if (s.lastUsedAt > cutoff) break;
      this.close(id);
    }
  }

  closeAll(): void {
    for (const id of [...this.#byId.keys()]) this.close(id);
  }
}
