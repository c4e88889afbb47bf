/**
 * Dispatch (docs/exec.md "Invocations"): a queued invocation goes to the least busy online agent that
 * takes it, claimed in the store (queued -> dispatched, guarded) in the same transaction as the send, so
 * that with several instances on one store an invocation is dispatched to one agent. Used by
 * InvocationService on create, on an accepted approval and for the queued retries.
 */
import * as machine from '../../core/exec/invocation-machine.js';
import type { Invocation } from '../../core/exec/invocation-machine.js';
import type { Change, ClaimOutcome } from '../../core/store/exec-invocations-store.js';
import type { InvocationServiceDeps } from './invocation-service.js';
import type { LiveInvocations } from './invocation-live.js';
import { DUE_BATCH } from './invocation-upkeep.js';

export interface InvocationDispatcherDeps extends Pick<InvocationServiceDeps, 'store' | 'registry' | 'now'> {
  readonly live: LiveInvocations;
}

export class InvocationDispatcher {
  readonly #deps: InvocationDispatcherDeps;
  /** Claims under way (the send made, the commit not yet acknowledged), by invocation id. */
  readonly #claims = new Map<string, Promise<void>>();
  #retrying = false;

  constructor(deps: InvocationDispatcherDeps) {
    this.#deps = deps;
  }

  /** The claim of the invocation under way here, settled (never rejects), if there is one. */
  claimOf(invocationId: string): Promise<void> | undefined {
    return this.#claims.get(invocationId);
  }

  claiming(invocationId: string): boolean {
    return this.#claims.has(invocationId);
  }

  /** Every claim under way here (none rejects). */
  claims(): Promise<void>[] {
    return [...this.#claims.values()];
  }

  /**
   * Sends a queued invocation to the least busy agent that takes it; stays queued when none does. The
   * claim (queued -> dispatched, guarded) and the send are one transaction: when another instance
   * dispatched or ended the invocation first, nothing is sent and its current state is returned.
   *
   * The live output slot exists before the send: with a network store the agent may answer before the
   * claim's commit is acknowledged, and its reports wait for the claim (`claimOf`, awaited by the
   * service's queue of reports) instead of being lost.
   */
  async dispatch(inv: Invocation): Promise<Invocation> {
    const { registry, store } = this.#deps;
    // Already being dispatched here (a retry and an accept at once): one claim at a time per invocation,
    // so a losing claim never drops the live output slot of the winning one.
    const pending = this.#claims.get(inv.id);
    if (pending) {
      await pending;
      return (await store.invocation(inv.id)) ?? inv;
    }
    for (const agent of registry.candidates(inv.projectId, inv.workspaceId, inv.toolName)) {
      const now = this.#deps.now();
      const t = machine.dispatch(inv, agent.id, now);
      if (!t) return inv;
      const message = { invocationId: inv.id, toolName: inv.toolName, arguments: inv.arguments, timeoutMs: machine.remainingMs(inv, now) };
      const change: Change = { projectId: inv.projectId, invocation: { from: inv.status, to: t.invocation }, approval: null, events: t.events };
      let sent = false;
      this.#deps.live.open(inv.id);
      const claim = store.claim(change, () => (sent = registry.dispatch(agent.id, message)));
      this.#claims.set(inv.id, claim.then(() => undefined, () => undefined));
      let outcome: ClaimOutcome;
      try {
        outcome = await claim;
      } catch (err) {
        this.#deps.live.forget(inv.id);
        // Sent but not recorded as dispatched: the agent must not run it behind our back.
        if (sent) registry.cancel(agent.id, inv.id);
        throw err;
      } finally {
        this.#claims.delete(inv.id);
      }
      if (outcome !== 'claimed') this.#deps.live.forget(inv.id);
      if (outcome === 'unsent') continue;
      if (outcome === 'taken') return (await store.invocation(inv.id)) ?? inv;
      this.#deps.live.status(inv.id, t.invocation.status);
      return t.invocation;
    }
    return inv;
  }

  /** Queued invocations look for an agent again (one came online, or the clock's periodic retry). */
  async retryQueued(): Promise<void> {
    if (this.#retrying) return;
    this.#retrying = true;
    try {
      let after = 0;
      for (;;) {
        const batch = await this.#deps.store.withStatus('queued', after, DUE_BATCH);
        for (const { seq, invocation } of batch) {
          after = seq;
          await this.dispatch(invocation);
        }
        if (batch.length < DUE_BATCH) return;
      }
    } finally {
      this.#retrying = false;
    }
  }
}
