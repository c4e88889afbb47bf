/**
 * MCP sessions across the worker threads of `serve --workers N` (issue 32): a client's next connection
 * lands on any worker, and its session must work there. The worker that initialized a session owns it
 * (its `McpSessions` entry: key, idle time, DELETE) and its id says so (`<uuid>-w<index>`). Another worker
 * that receives a request naming it asks the owner (worker-rpc.ts: is it this key's, still open?), and
 * serves the request itself on a replica: an SDK server and transport of its own, initialized by
 * replaying the client's own `initialize` message, which the owner kept. Every request is checked with
 * the owner first, so a session ended or expired there is ended everywhere (a stale replica answers 404
 * like the owner would), and a DELETE on a replica ends it at the owner.
 *
 * A session's state is only what `initialize` set (protocol version, client capabilities): tools run
 * through the invocations service and the agent registry, which the workers share (the store; the
 * agents' presence: coordination/broadcast-presence.ts), and a POST's response stream belongs to that
 * request alone (GET streams are 405). So a replica answers exactly as the owner would, with no request
 * forwarded between threads.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { WorkerRpc } from '../coordination/worker-rpc.js';
import type { McpSessions } from '../mcp/mcp-sessions.js';

/** An owner that does not answer within this is taken as gone: the session answers 404, the client initializes again. */
const OWNER_TIMEOUT_MS = 2_000;
/** As McpSessions' defaults: a replica unused for this long, or past this many, is dropped (the owner still holds the session). */
const REPLICA_IDLE_MS = 30 * 60 * 1000;
const MAX_REPLICAS = 10_000;

const USE = 'mcp.use';
const END = 'mcp.end';
const OWNED = /-w(\d{1,4})$/;

interface SessionRef {
  readonly id: string;
  readonly projectId: string;
  readonly keyId: string;
}

const isRef = (p: unknown): p is SessionRef =>
  typeof p === 'object' && p !== null && typeof (p as SessionRef).id === 'string' && typeof (p as SessionRef).projectId === 'string' && typeof (p as SessionRef).keyId === 'string';

type Transport = WebStandardStreamableHTTPServerTransport;

interface Replica extends SessionRef {
  readonly server: Server;
  readonly transport: Transport;
  lastUsedAt: number;
}

export interface McpWorkerSessionsDeps {
  readonly rpc: WorkerRpc;
  /** This worker's own sessions (the owner's table). */
  readonly sessions: McpSessions;
  readonly createServer: () => Server;
  readonly maxBodyBytes: number;
  readonly now: () => number;
}

export interface McpWorkerSessions {
  /** An id for a session initialized here: it names this worker as the owner. */
  newSessionId(): string;
  /** `initialize` succeeded here: its message is kept for other workers to replay. */
  initialized(transport: Transport, body: Buffer | null): void;
  /** The transport of a session another worker owns, when the owner holds it for this key; null: 404. */
  replica(sessionId: string, projectId: string, keyId: string): Promise<Transport | null>;
  /** A DELETE was answered for this session: if another worker owns it, it ends there too. */
  ended(sessionId: string, projectId: string, keyId: string): Promise<void>;
  close(): void;
}

/** A server of this worker initialized as the client initialized the owner's. */
async function openReplica(deps: McpWorkerSessionsDeps, ref: SessionRef, initialize: string, onClosed: (id: string) => void): Promise<Replica | null> {
  const server = deps.createServer();
  const transport: Transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => ref.id,
    maxRequestBodySize: deps.maxBodyBytes,
    onsessionclosed: onClosed,
  });
  await server.connect(transport);
  const replay = new Request('http://localhost/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: initialize,
  });
  const res = await transport.handleRequest(replay);
  await res.text();
  if (res.status !== 200 || transport.sessionId !== ref.id) {
    await server.close().catch(() => undefined);
    return null;
  }
  return { ...ref, server, transport, lastUsedAt: deps.now() };
}

export function createMcpWorkerSessions(deps: McpWorkerSessionsDeps): McpWorkerSessions {
  const { rpc, sessions, now } = deps;
  /** By the owner: the `initialize` message of each session it created (gone with its transport). */
  const initializeOf = new WeakMap<Transport, string>();
  /** Use order, as McpSessions. */
  const replicas = new Map<string, Replica>();
  const opening = new Map<string, Promise<Replica | null>>();
  const ownerOf = (id: string): number | null => {
    const owner = Number(OWNED.exec(id)?.[1] ?? Number.NaN);
    return Number.isInteger(owner) && owner !== rpc.self && owner < rpc.workers ? owner : null;
  };
  const drop = (id: string): void => {
    const r = replicas.get(id);
    replicas.delete(id);
    if (r) void r.server.close().catch(() => undefined);
  };

  // The owner's side: the session, if it is still open and this key's (its use keeps it from idling out).
  rpc.handle(USE, (p) => {
    const session = isRef(p) ? sessions.use(p.id, p.projectId, p.keyId) : null;
    return session ? (initializeOf.get(session.transport) ?? null) : null;
  });
  rpc.handle(END, (p) => {
    if (isRef(p) && sessions.use(p.id, p.projectId, p.keyId)) sessions.close(p.id);
    return true;
  });

  async function replicaOf(ref: SessionRef, initialize: string): Promise<Replica | null> {
    const held = replicas.get(ref.id);
    if (held && held.projectId === ref.projectId && held.keyId === ref.keyId) return held;
    // Two requests at once for a session new here: one replica.
    let pending = opening.get(ref.id);
    if (!pending) {
      pending = openReplica(deps, ref, initialize, (id) => void replicas.delete(id)).finally(() => opening.delete(ref.id));
      opening.set(ref.id, pending);
    }
    const r = await pending;
    if (r && !replicas.has(ref.id)) {
      replicas.set(ref.id, r);
      while (replicas.size > MAX_REPLICAS) drop(replicas.keys().next().value as string);
    }
    return r;
  }

  const sweep = setInterval(() => {
    const cutoff = now() - REPLICA_IDLE_MS;
    for (const [id, r] of replicas) {
      if (r.lastUsedAt > cutoff) break;
      drop(id);
    }
  }, 60_000);
  sweep.unref();

  return {
    newSessionId: () => `${randomUUID()}-w${rpc.self}`,
    initialized(transport, body) {
      if (transport.sessionId !== undefined && body !== null) initializeOf.set(transport, body.toString('utf8'));
    },
    async replica(id, projectId, keyId) {
      const owner = ownerOf(id);
      if (owner === null) return null;
      const ref = { id, projectId, keyId };
      const answer = await rpc.call(owner, USE, ref, OWNER_TIMEOUT_MS);
      if (!answer.answered || typeof answer.value !== 'string') {
        // Ended, expired or never the key's at the owner: not here either.
        if (replicas.get(id)?.keyId === keyId) drop(id);
        return null;
      }
      const r = await replicaOf(ref, answer.value);
      if (r === null) return null;
      r.lastUsedAt = now();
      replicas.delete(id);
      replicas.set(id, r);
      return r.transport;
    },
    async ended(id, projectId, keyId) {
      const owner = ownerOf(id);
      if (owner === null) return;
      drop(id);
      await rpc.call(owner, END, { id, projectId, keyId }, OWNER_TIMEOUT_MS);
    },
    close() {
      clearInterval(sweep);
      for (const id of [...replicas.keys()]) drop(id);
    },
  };
}
