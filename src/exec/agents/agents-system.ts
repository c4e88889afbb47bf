/**
 * The agents' side assembled for the composition root (main.ts calls this once): the store, the
 * registry, enrollment, the management use cases, and the lease timer. The timer reads the injected
 * clock, so a test gateway's `POST /__test/clock` expires leases without waiting; it ticks every tenth of
 * the lease (at most every second), so an agent is offline at most that long after its lease ran out.
 */
import type { Logger } from '../../log.js';
import type { Catalog } from '../../store/catalog.js';
import type { ExecAgentsStore, ExecPresence } from '../../core/store/exec-agents-store.js';
import type { WsSocket } from '../../http/ws.js';
import type { ProjectRecord } from '../../core/records.js';
import type { ThrottlePort } from '../../core/coordination/throttle-port.js';
import { createEnrollmentLimiter, type EnrollmentLimits } from '../../core/exec/enrollment-limiter.js';
import type { SchemaCheckOutput } from '../../pool/tasks.js';
import { createAgentsAdmin, type AgentsAdmin } from './agents-admin.js';
import { AgentSession } from './agent-session.js';
import { authenticateAgentConnection } from './connect-auth.js';
import { createEnrollment, type Credential } from './enrollment.js';
import { createLocalAgentRegistry, type LocalAgentRegistry } from './local-agent-registry.js';
import { createSharedAgentRegistry } from './shared-agent-registry.js';

export interface AgentsSystemOptions {
  /** Join keys and agents: this replica's SQLite file, or PostgreSQL shared by the replicas. */
  readonly store: ExecAgentsStore;
  /** PostgreSQL mode: which replica holds which agent (shared-agent-registry.ts); null: this process alone. */
  readonly presence: ExecPresence | null;
  readonly catalog: Catalog;
  readonly leaseMs: number;
  readonly now: () => number;
  readonly logger: Logger;
  /** Manifest schemas compiled off the event loop (src/pool/schema-pool.ts), taking turns by project (`tenant`). */
  readonly checkSchemas: (schemas: readonly Record<string, unknown>[], tenant: string) => Promise<SchemaCheckOutput>;
  /** Agent connections per key and per project per minute (config `exec.enrollments_per_minute_*`). */
  readonly enrollmentLimits: EnrollmentLimits;
  /** Where the enrollment counters live: the deployment's throttle port (one truth across workers and replicas). */
  readonly throttles: ThrottlePort;
}

export interface AgentsSystem {
  /** The seam the invocations' side dispatches through (src/core/exec/agent-registry.ts). */
  readonly registry: LocalAgentRegistry;
  readonly admin: AgentsAdmin;
  readonly leaseMs: number;
  /** Throws the GatewayError the upgrade is refused with. */
  authenticate(authorization: string | undefined, projectRef: string): Promise<{ project: ProjectRecord; credential: Credential }>;
  /** Counts an upgrade against the enrollment rate limit; rejects with the 429 (or 503) it is refused with. */
  admitConnection(projectId: string, credential: Credential): Promise<void>;
  openSession(socket: WsSocket, projectId: string, credential: Credential): AgentSession;
  start(): void;
  close(): void;
}

export function createAgentsSystem(options: AgentsSystemOptions): AgentsSystem {
  const { store, catalog, leaseMs, now, logger, presence, checkSchemas } = options;
  const limiter = createEnrollmentLimiter(options.enrollmentLimits, options.throttles);
  const localRegistry = createLocalAgentRegistry({
    now,
    leaseMs,
    onReportError: (err) => logger.error({ err }, 'exec: an agent report subscriber failed'),
    onOffline: (agentId, lastSeen) => {
      store.lastSeen(agentId, lastSeen).catch((err: unknown) => logger.error({ err, agent_id: agentId }, 'exec: could not record when the agent was last seen'));
      logger.info({ agent_id: agentId }, 'exec agent offline');
    },
  });
  const shared = presence ? createSharedAgentRegistry(localRegistry, { presence, agents: store, onError: (err, what) => logger.warn({ err }, `exec: ${what} failed`) }) : null;
  const registry = shared ?? localRegistry;
  const enroll = createEnrollment({
    store,
    isOnline: registry.isOnline,
    workspaceIds: (projectId) => new Set(catalog.workspaces(projectId).keys()),
    projectUuid: (projectId) => catalog.project(projectId)?.uuid ?? projectId,
    now,
    checkSchemas,
  });
  const admin = createAgentsAdmin({ store, registry, now });
  // Every open session: the tick closes those that have not enrolled within the lease.
  const sessions = new Set<AgentSession>();
  let timer: NodeJS.Timeout | null = null;

  const tick = (): void => {
    try {
      const t = now();
      for (const id of registry.expireLeases()) logger.warn({ agent_id: id, lease_ms: leaseMs }, 'exec agent lease expired');
      for (const s of sessions) s.expireIfNotEnrolled(t);
      // Replicas that died leave the instance registry: their agents drop out of the candidates here.
      shared?.refresh().catch((err: unknown) => logger.warn({ err }, 'exec: reading the agents of the other replicas failed'));
    } catch (err) {
      logger.error({ err }, 'exec: the lease check failed');
    }
  };

  return {
    registry,
    admin,
    leaseMs,
    authenticate: (authorization, projectRef) => authenticateAgentConnection({ store, project: catalog.project }, authorization, projectRef),
    async admitConnection(projectId, credential) {
      const refusal = await limiter.admit(projectId, credential.keyHash, now());
      if (refusal) throw refusal;
    },
    openSession(socket, projectId, credential) {
      const session = new AgentSession(socket, {
        projectId,
        credential,
        enroll,
        registry,
        leaseMs,
        now,
        log: (level, fields, message) => logger[level](fields, message),
        onClosed: (s) => sessions.delete(s),
      });
      sessions.add(session);
      return session;
    },
    start() {
      timer ??= setInterval(tick, Math.max(50, Math.min(1000, Math.floor(leaseMs / 10))));
      timer.unref();
    },
    close() {
      if (timer) clearInterval(timer);
      shared?.close();
      timer = null;
    },
  };
}
