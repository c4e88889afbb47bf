/**
 * Execution (docs/exec.md): agents, their join keys and presence; invocations and approvals, dispatched
 * through `agents.registry`, which reports back to them; one set of approval decisions ("Who decides") for
 * the REST routes, MCP and the dashboard; and the chat tool bridge (x_exec) over the same invocations service.
 */
import { createApprovalDecisions, type ApprovalDecisions, type RoleLookup } from '../app/approval-decisions.js';
import type { Services } from '../app/services.js';
import type { Config } from '../config.js';
import type { SharedCoordination } from '../coordination/coordination.js';
import { createBroadcastPresence, presenceChannelName, type BroadcastPresence } from '../coordination/broadcast-presence.js';
import type { ExecToolRunner } from '../core/chat/exec-bridge.js';
import type { ExecPresence } from '../core/store/exec-agents-store.js';
import { createAgentsSystem, type AgentsSystem } from '../exec/agents/agents-system.js';
import { createChatToolRunner } from '../exec/invocations/chat-tool-runner.js';
import { approvalPolicies, createExecInvocations, type ExecInvocations, type ExecInvocationsStorage } from '../exec/invocations/exec-invocations.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import { createExecInvocationsStore, EXEC_INVOCATIONS_TOPIC } from '../store/exec-invocations/exec-invocations-store.js';
import type { Logger } from '../log.js';
import { createSchemaPool, type SchemaPool } from '../pool/schema-pool.js';
import type { ExecServices } from '../routes/exec-invocations.js';
import { createPgExecPresence } from '../store/postgres/exec-presence.js';
import { createExecAgentsStore } from '../store/exec-agents/exec-agents-store.js';
import type { InstanceRegistry } from '../store/instances-registry.js';
import type { LimitsParts, SharedReplicas } from './limits.js';
import type { BusyStore, StoreParts } from './store.js';

export interface ExecParts {
  /** Worker threads on SQLite: which worker holds which agent, over the launch's BroadcastChannel (issue 32). */
  readonly workerPresence: BroadcastPresence | null;
  /** Tool schemas are compiled, and arguments checked, on two lanes of schema threads of their own, fair between projects (issue 31). */
  readonly schemas: SchemaPool;
  readonly agents: AgentsSystem;
  readonly execInvocations: ExecInvocations;
  readonly approvals: ApprovalDecisions;
  readonly execServices: ExecServices & { readonly approvals: ApprovalDecisions };
  readonly execTools: ExecToolRunner;
}

export interface ExecDeps {
  readonly config: Config;
  readonly services: Services;
  readonly storage: StoreParts;
  readonly busy: BusyStore;
  readonly limits: LimitsParts;
  readonly shared: SharedReplicas | null;
  readonly workerThreads: SharedCoordination | undefined;
  /** Who is an owner or admin of a project (the dashboard's users), for approvals. */
  readonly roleOf: RoleLookup;
  /** Whose instance's work is recovered when it stops (the shared registry with PostgreSQL). */
  readonly recoveryCue: RecoveryCue;
  readonly logger: Logger;
}

export function wireExec({ config, services, storage, busy, limits, shared, workerThreads, roleOf, recoveryCue, logger }: ExecDeps): ExecParts {
  const { busyDb, busyOutbox } = busy;
  const { instances } = limits;
  // Join keys and agents: with PostgreSQL shared by the replicas (an agent's socket is still held by one).
  const execAgentsStore = createExecAgentsStore(busy.busySql);
  const workerPresence = !shared && workerThreads ? workerPresenceOf(workerThreads, instances) : null;
  const execPresence: ExecPresence | null = shared ? createPgExecPresence(shared.pg, shared.instances.id) : workerPresence;
  const schemas = createSchemaPool();
  const agents = createAgentsSystem({
    store: execAgentsStore,
    presence: execPresence,
    catalog: storage.catalog,
    leaseMs: config.exec.lease_ms,
    now: services.now,
    logger,
    checkSchemas: schemas.checkSchemas,
    enrollmentLimits: { perKey: config.exec.enrollments_per_minute_per_key, perProject: config.exec.enrollments_per_minute_per_project },
    throttles: limits.coordination.throttles,
  });
  // With PostgreSQL, invocations and approvals are shared by the replicas (migration 009-exec).
  const invocationStorage: ExecInvocationsStorage = {
    store: createExecInvocationsStore({ ...busy.busySql, owner: shared ? shared.instances.id : instances.id, now: services.now }),
    recoveryCue,
    shared: shared ? { onChange: (listener) => shared.pg.onChange(EXEC_INVOCATIONS_TOPIC, listener) } : null,
  };
  const execInvocations = createExecInvocations({ config, storage: invocationStorage, registry: agents.registry, argumentsValidator: schemas.validator, now: services.now, logger });
  const issuanceOf = async (projectId: string, keyId: string) => {
    const key = await storage.catalogStore.findInProject(projectId, keyId);
    return key && { userId: key.userId, issuedBy: key.issuedBy };
  };
  const approvals = createApprovalDecisions(execInvocations.service, roleOf, issuanceOf);
  const execServices = { ...services, exec: execInvocations.service, execDefaultTimeoutMs: config.exec.default_timeout_ms, approvals };
  const execTools = createChatToolRunner({ service: execInvocations.service, registry: agents.registry, policyOf: approvalPolicies(config), timeoutMs: config.exec.default_timeout_ms });
  return { workerPresence, schemas, agents, execInvocations, approvals, execServices, execTools };
}

function workerPresenceOf(workerThreads: SharedCoordination, instances: InstanceRegistry): BroadcastPresence {
  const presence = createBroadcastPresence(presenceChannelName(workerThreads.channel), instances.id, (id) => instances.isRegistered(id));
  instances.onSweep((sweep) => presence.reaped(sweep.reaped));
  return presence;
}
