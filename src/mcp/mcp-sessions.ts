/**
 * MCP sessions (`Mcp-Session-Id`), in this process's memory (docs/mcp.md "Sessions"): each is one SDK
 * `Server` with its transport, owned by the API key that initialized it. A request naming a session of
 * another key, or one this process does not hold (ended, idle too long, another process's, before a
 * restart), is answered 404 and the client initializes again, as the transport specification says.
 *
 * Tenants never push each other out (issue 31): a key and a project each hold at most a configured number
 * of sessions. A new `initialize` past a cap closes the least recently used *idle* session of that same
 * key or project (one with no request in flight, so no running tool call is cancelled); when all of them
 * are busy it is refused (429 mcp_session_limit_reached). The process-wide cap is a memory bound only: it
 * never closes another project's session either, it refuses. Places are reserved before the SDK
 * initializes the session, so concurrent `initialize` calls cannot overshoot a cap.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { retryStrategy, tooManyRequests } from '../core/limits/limit-headers.js';
import type { GatewayError } from '../errors.js';

export interface McpSession {
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly projectId: string;
  readonly keyId: string;
  lastUsedAt: number;
  /** Requests of this session under way (a tool call waiting for its invocation among them). */
  inFlight: number;
  /**
   * By JSON-RPC request id (as JSON text): how to tell the POST that carried it the client cancelled it
   * (mcp/pending-answers.ts). A cancelled request gets no answer (MCP), so the stream its POST holds (a
   * batch's too) would stay open, the session busy, until the client left.
   */
  readonly answering?: Map<string, () => void>;
}

export interface McpSessionLimits {
  /** A session unused for this long is closed (unless a request of it is under way). */
  readonly idleMs: number;
  /** Sessions held at once by this process, all projects together. */
  readonly maxSessions: number;
  readonly maxPerProject: number;
  readonly maxPerKey: number;
}

/** config `exec.mcp_sessions` defaults (src/config/exec.ts): a key's clients, a project's keys, a process's memory. */
export const DEFAULT_SESSION_LIMITS: McpSessionLimits = { idleMs: 30 * 60 * 1000, maxSessions: 10_000, maxPerProject: 1_000, maxPerKey: 100 };

/** A place held for a session being initialized: `commit` once the SDK gave it an id, else `release`. */
export interface Reservation {
  commit(id: string, session: McpSession): void;
  release(): void;
}

/** Sessions of one owner (a key or a project) in use order, with the places reserved for new ones. */
class Group {
  readonly byId = new Map<string, McpSession>();
  reserved = 0;
  get held(): number {
    return this.byId.size + this.reserved;
  }
  touch(id: string, s: McpSession): void {
    this.byId.delete(id);
    this.byId.set(id, s);
  }
  /** The least recently used session with no request under way. */
  oldestIdle(): string | null {
    for (const [id, s] of this.byId) if (s.inFlight === 0) return id;
    return null;
  }
}

export class McpSessions {
  /** Insertion order is use order: a used session is moved to the end. */
  readonly #byId = new Map<string, McpSession>();
  readonly #keys = new Map<string, Group>();
  readonly #projects = new Map<string, Group>();
  #reserved = 0;
  readonly #limits: McpSessionLimits;
  readonly #now: () => number;

  constructor(now: () => number, limits: McpSessionLimits = DEFAULT_SESSION_LIMITS) {
    this.#now = now;
    this.#limits = limits;
  }

  get size(): number {
    return this.#byId.size;
  }

  /**
   * A place for a new session of this key, closing the key's (then the project's) least recently used
   * idle session when it is at its cap; 429 mcp_session_limit_reached when every one of them is busy, or
   * the process holds as many as it may.
   */
  reserve(projectId: string, keyId: string): Reservation {
    this.#makeRoom(this.#keys, keyId, this.#limits.maxPerKey, `This API key holds ${this.#limits.maxPerKey} MCP sessions`);
    this.#makeRoom(this.#projects, projectId, this.#limits.maxPerProject, `Project ${projectId} holds ${this.#limits.maxPerProject} MCP sessions`);
    if (this.#byId.size + this.#reserved >= this.#limits.maxSessions) {
      // Never another project's: its own idle session, or a refusal.
      const own = this.#projects.get(projectId)?.oldestIdle() ?? null;
      if (own === null) throw limitReached(`This server holds ${this.#limits.maxSessions} MCP sessions, the most it may`);
      this.close(own);
    }
    // Looked up after the closes above, which drop a group left empty; a reserved place keeps it.
    const key = this.#group(this.#keys, keyId);
    const project = this.#group(this.#projects, projectId);
    key.reserved += 1;
    project.reserved += 1;
    this.#reserved += 1;
    let open = true;
    const release = (): void => {
      if (!open) return;
      open = false;
      key.reserved -= 1;
      project.reserved -= 1;
      this.#reserved -= 1;
      this.#dropIfEmpty(keyId, projectId);
    };
    return {
      commit: (id, session) => {
        release();
        this.#byId.set(id, session);
        this.#group(this.#keys, keyId).byId.set(id, session);
        this.#group(this.#projects, projectId).byId.set(id, session);
      },
      release,
    };
  }

  /** The session, when it exists and belongs to this key of this project. */
  use(id: string, projectId: string, keyId: string): McpSession | null {
    const s = this.#byId.get(id);
    if (!s || s.projectId !== projectId || s.keyId !== keyId) return null;
    s.lastUsedAt = this.#now();
    this.#byId.delete(id);
    this.#byId.set(id, s);
    this.#keys.get(keyId)?.touch(id, s);
    this.#projects.get(projectId)?.touch(id, s);
    return s;
  }

  /** Forgets the session (the transport ended it: DELETE); no close of the transport. */
  forget(id: string): void {
    const s = this.#byId.get(id);
    if (!s) return;
    this.#byId.delete(id);
    this.#keys.get(s.keyId)?.byId.delete(id);
    this.#projects.get(s.projectId)?.byId.delete(id);
    this.#dropIfEmpty(s.keyId, s.projectId);
  }

  close(id: string): void {
    const s = this.#byId.get(id);
    this.forget(id);
    if (s) void s.server.close().catch(() => undefined);
  }

  /** Closes the sessions idle for longer than the limit (run every minute); a busy one is not idle. */
  sweep(): void {
    const cutoff = this.#now() - this.#limits.idleMs;
    for (const [id, s] of this.#byId) {
      // Use order: the first one used recently enough ends the scan.
      if (s.lastUsedAt > cutoff) break;
      if (s.inFlight === 0) this.close(id);
    }
  }

  closeAll(): void {
    for (const id of [...this.#byId.keys()]) this.close(id);
  }

  #group(groups: Map<string, Group>, id: string): Group {
    let g = groups.get(id);
    if (!g) groups.set(id, (g = new Group()));
    return g;
  }

  #makeRoom(groups: Map<string, Group>, id: string, cap: number, what: string): void {
    for (let group = groups.get(id); group && group.held >= cap; group = groups.get(id)) {
      const idle = group.oldestIdle();
      if (idle === null) throw limitReached(`${what}, each with a request under way`);
      this.close(idle);
    }
  }

  #dropIfEmpty(keyId: string, projectId: string): void {
    if (this.#keys.get(keyId)?.held === 0) this.#keys.delete(keyId);
    if (this.#projects.get(projectId)?.held === 0) this.#projects.delete(projectId);
  }
}

/** SPEC Errors: a 429 carries retry_after and retry_strategy. A busy session frees as soon as its call ends. */
function limitReached(what: string): GatewayError {
  const message = `${what}: end one (DELETE /v1/mcp with its Mcp-Session-Id) or wait for one to finish its call, then initialize again.`;
  return tooManyRequests('mcp_session_limit_reached', message, 1, retryStrategy('requests', 1));
}
