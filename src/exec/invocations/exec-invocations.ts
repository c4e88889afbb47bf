/**
 * The invocations' half of the execution surface, assembled for the composition root (main.ts calls this
 * once): the store on the gateway's connection (the outbox writes events there, inside the same
 * transactions), the service, subscribed to the agent registry's reports, and its clock. Recovery runs
 * at start and whenever the instance registry finds a sibling dead: it fails only invocations whose
 * dispatching instance is gone (issue 12).
 */
import type { Config } from '../../config.js';
import type { AgentRegistry } from '../../core/exec/agent-registry.js';
import type { ArgumentsValidator } from '../../core/exec/tool-arguments.js';
import type { ApprovalPolicy } from '../../core/exec/approval-machine.js';
import { invocationIds } from '../../core/exec/invocation-ids.js';
import type { Logger } from '../../log.js';
import type { InstanceRegistry } from '../../store/instances-registry.js';
import { createExecInvocationsStore, EXEC_INVOCATIONS_TOPIC, type ExecInvocationsStoreDeps } from '../../store/exec-invocations/exec-invocations-store.js';
import type { PgInstanceRegistry } from '../../store/postgres/instances-registry.js';
import type { PgStore } from '../../store/postgres/pg-store.js';
import { ExecClock } from './exec-clock.js';
import { InvocationService } from './invocation-service.js';

/** Real time between the clock's polls: short, so a moved test clock shows its effect within a blink. */
const POLL_MS = 100;
/** Queued retries and the Idempotency-Key sweep: every 10 polls (a second). */
const SWEEP_EVERY = 10;

export interface ExecInvocations {
  readonly service: InvocationService;
  /** Fails what stopped instances left dispatched (now and as siblings die), then starts the clock. */
  start(): void;
  /** Resolves once what agents reported so far is written (a graceful stop, before the store closes). */
  settled(): Promise<void>;
  close(): void;
}

export interface ExecInvocationsOptions {
  readonly config: Config;
  /** The store's backend: its runner and the outbox its events go to, inside the same transactions. */
  readonly sql: Pick<ExecInvocationsStoreDeps, 'runner' | 'events'>;
  readonly registry: AgentRegistry;
  /** Invocation arguments checked off the event loop (src/pool/schema-pool.ts). */
  readonly argumentsValidator: ArgumentsValidator;
  readonly now: () => number;
  readonly logger: Logger;
  readonly instances: InstanceRegistry;
  /**
   * PostgreSQL mode: invocations, approvals and their events in the shared database, owned by this
   * replica's id in its registry there, recovered as that registry finds replicas dead; null: SQLite.
   */
  readonly shared: { readonly pg: PgStore; readonly instances: PgInstanceRegistry } | null;
}

/** Approval settings by project and workspace, from the config file; a workspace it does not list gets the defaults. */
export function approvalPolicies(config: Config): (projectId: string, workspaceId: string) => ApprovalPolicy {
  const byWorkspace = new Map<string, ApprovalPolicy>();
  for (const p of config.projects) {
    for (const w of p.workspaces) {
      byWorkspace.set(`${p.id}/${w.id}`, {
        approvalRequiredTools: w.exec.approval_required_tools,
        chain: w.exec.approval_chain.map((s) => ({ target: s.target, timeoutMs: s.timeout_ms })),
      });
    }
  }
  return (projectId, workspaceId) => byWorkspace.get(`${projectId}/${workspaceId}`) ?? DEFAULT_POLICY;
}

/** docs/exec.md "Approvals": one stage, target `operators`, 15 minutes (the config's own default). */
export const DEFAULT_POLICY: ApprovalPolicy = { approvalRequiredTools: [], chain: [{ target: 'operators', timeoutMs: 15 * 60 * 1000 }] };

export function createExecInvocations(options: ExecInvocationsOptions): ExecInvocations {
  const { config, registry, now, logger, instances, shared, argumentsValidator } = options;
  const store = createExecInvocationsStore({ ...options.sql, owner: shared ? shared.instances.id : instances.id, now });
  const service = new InvocationService({
    store,
    registry,
    argumentsValidator,
    now,
    ids: invocationIds,
    policyOf: approvalPolicies(config),
    outputCapBytes: config.exec.output_cap_bytes,
    abandonedAs: shared ? 'agent_offline' : 'gateway_restarted',
  });
  registry.subscribe(service);
  const clock = new ExecClock(service, {
    pollMs: POLL_MS,
    sweepEvery: SWEEP_EVERY,
    sweep: async () => {
      await service.retryQueued();
      await store.dropExpiredKeys(now());
    },
    onError: (err) => logger.error({ err }, 'exec: the clock poll failed; retrying at the next poll'),
  });
  const recover = (): void => {
    service.recover().then(
      (failed) => {
        if (failed > 0) logger.warn({ invocations: failed }, 'exec: invocations dispatched by a stopped gateway instance failed (gateway_restarted)');
      },
      (err: unknown) => logger.error({ err }, 'exec: recovering the invocations of stopped instances failed; the next sweep tries again'),
    );
  };
  // Another replica committed a change: readers here and agents here hear of it now, not at the next poll.
  const onChange = (): void => void service.reconcile().catch((err: unknown) => logger.warn({ err }, 'exec: reconciling after a change notice failed'));
  let stopRecovering: (() => void) | null = null;
  let stopListening: (() => void) | null = null;
  return {
    service,
    start() {
      recover();
      stopRecovering = (shared?.instances ?? instances).onSweep(recover);
      if (shared) stopListening = shared.pg.onChange(EXEC_INVOCATIONS_TOPIC, onChange);
      clock.start();
    },
    settled: () => service.settled(),
    close: () => {
      stopRecovering?.();
      stopListening?.();
      clock.stop();
    },
  };
}
