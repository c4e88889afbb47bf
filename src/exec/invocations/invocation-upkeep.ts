/**
 * The invocations' work that no request asks for (docs/exec.md "Timeouts", "Approvals", "Durability"):
 * timeouts and approval lapses as their deadlines come (run by exec-clock.ts), recovery of what a stopped
 * instance had out (at start, and when a sibling instance is found dead), and reconciling with what other
 * instances did (at every poll, and on a change notice). InvocationService exposes each of them; they
 * commit through the same guarded settle (transition-settler.ts), so with several instances polling the
 * same rows one of them applies each transition.
 */
import * as approvals from '../../core/exec/approval-machine.js';
import { execEvents } from '../../core/exec/exec-events.js';
import * as machine from '../../core/exec/invocation-machine.js';
import type { Invocation, Transition } from '../../core/exec/invocation-machine.js';
import type { InvocationServiceDeps } from './invocation-service.js';
import type { LiveInvocations } from './invocation-live.js';
import type { TransitionSettler } from './transition-settler.js';

/** Rows handled per store query by the clock's work and the queued retries. */
export const DUE_BATCH = 100;

export interface InvocationUpkeepDeps extends Pick<InvocationServiceDeps, 'store' | 'registry' | 'now' | 'abandonedAs'> {
  readonly live: LiveInvocations;
  readonly settler: TransitionSettler;
  /** Whether reports of the invocation are being applied here (the service's queue per invocation). */
  readonly reporting: (invocationId: string) => boolean;
  /** Whether this instance's claim of the invocation is under way (sent, its commit not yet acknowledged). */
  readonly claiming: (invocationId: string) => boolean;
}

export class InvocationUpkeep {
  readonly #deps: InvocationUpkeepDeps;

  constructor(deps: InvocationUpkeepDeps) {
    this.#deps = deps;
  }

  /**
   * Timeouts whose deadline has come; the agent is told to stop. Every instance's clock reads the same
   * due rows: the guarded commit lets one of them time each out (one `exec.timeout`); the others' lose.
   */
  async expireDue(limit = DUE_BATCH): Promise<number> {
    const { store, live, settler } = this.#deps;
    const due = await store.dueInvocations(this.#deps.now(), limit);
    for (const inv of due) {
      const t = machine.timeOut(live.withOutput(inv), this.#deps.now());
      if (t) await settler.settle(inv, t, null);
    }
    return due.length;
  }

  /** Approval stages that lapsed: escalations, and expiries that fail their invocation. */
  async lapseDue(limit = DUE_BATCH): Promise<number> {
    const { store } = this.#deps;
    const due = await store.dueApprovals(this.#deps.now(), limit);
    for (const a of due) {
      const t = approvals.lapse(a, this.#deps.now());
      if (!t) continue;
      // A lost commit: another instance's clock escalated or expired it first, with the events.
      if (t.approval.state !== 'expired') {
        await store.commit({ projectId: a.projectId, invocation: null, approval: { from: a, to: t.approval }, events: t.events });
        continue;
      }
      const inv = await store.invocation(a.invocationId);
      const expired = inv ? machine.fail(inv, 'approval_expired', 'Nobody decided on the approval before its escalation chain ran out.', this.#deps.now(), t.events) : null;
      await this.#deps.settler.settle(inv, expired ?? { invocation: null, events: t.events }, { from: a, to: t.approval });
    }
    return due.length;
  }

  /**
   * At start (docs/exec.md "Durability"), and whenever a sibling instance is found dead: invocations that
   * a stopped gateway instance had dispatched fail with gateway_restarted (their agent's result would come
   * to a connection that no longer exists); a live instance's are left alone. Queued ones and pending
   * approvals resume, their deadlines on the stored clock times. Each batch is read and failed in one
   * transaction, so two instances recovering at once fail each invocation once.
   */
  async recover(): Promise<number> {
    const { store } = this.#deps;
    let failed = 0;
    for (const status of ['dispatched', 'running'] as const) {
      let after = 0;
      for (;;) {
        const batch = await store.failAbandoned(status, after, DUE_BATCH, (invocation) => {
          const t = this.#abandoned(invocation);
          return t && { projectId: invocation.projectId, invocation: { from: invocation.status, to: t.invocation }, approval: null, events: t.events };
        });
        after = batch.at(-1)?.seq ?? after;
        failed += batch.length;
        if (batch.length < DUE_BATCH) break;
      }
    }
    return failed;
  }

  /**
   * What other instances did to invocations this one serves (issue 12): one it dispatched that another
   * ended (a cancel made there, its clock's timeout, a recovery that judged this instance dead) still
   * runs on our agent, which only we can reach: it is told to stop. Readers here (SSE, the chat bridge)
   * of any invocation that changed elsewhere are told its status. Run by the clock at every poll, and on
   * a change notice when the store sends them (PostgreSQL).
   */
  async reconcile(): Promise<void> {
    const { live, reporting, claiming } = this.#deps;
    const ids = live.followed();
    if (ids.size === 0) return;
    for (const { id, status, agentId } of await this.#deps.store.statusesOf([...ids])) {
      if (!machine.isTerminal(status)) {
        // Readers of an invocation served elsewhere hear its moves (approved, dispatched, running) too.
        live.movedElsewhere(id, status);
        continue;
      }
      if (live.serves(id) && agentId !== null && !reporting(id)) this.#deps.registry.cancel(agentId, id);
      if (reporting(id) || claiming(id)) continue;
      const servedHere = live.ended(id);
      if (!servedHere) {
        // Run by another replica: its output streamed there; readers here get it whole with the end.
        const ended = await this.#deps.store.invocation(id);
        if (ended?.output) live.watch.publish(id, { kind: 'output', data: ended.output });
      }
      live.watch.publish(id, { kind: 'status', status });
    }
  }

  #abandoned(inv: Invocation): Transition | null {
    const now = this.#deps.now();
    if (this.#deps.abandonedAs !== 'agent_offline' || inv.agentId === null) {
      return machine.fail(inv, 'gateway_restarted', 'The gateway instance running this invocation stopped; its result cannot be known.', now);
    }
    const before = [execEvents.agentOffline({ invocationId: inv.id, agentId: inv.agentId, reason: 'disconnected', at: now })];
    return machine.fail(inv, 'agent_offline', 'The agent running the invocation went offline (disconnected: the gateway replica it was connected to stopped).', now, before);
  }
}
