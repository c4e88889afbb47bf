/**
 * The one way a transition that ends (or changes) an invocation is committed, shared by the requests'
 * use cases (invocation-service.ts) and the clock's work (invocation-upkeep.ts): the guarded commit
 * first, then, only for the instance whose commit won, the word to the agent and to the live readers.
 */
import type { AgentRegistry } from '../../core/exec/agent-registry.js';
import type { ExecEvent } from '../../core/exec/exec-events.js';
import * as machine from '../../core/exec/invocation-machine.js';
import type { Invocation, Transition } from '../../core/exec/invocation-machine.js';
import type { Change, ExecInvocationsStore } from '../../core/store/exec-invocations-store.js';
import type { LiveInvocations } from './invocation-live.js';

/** A transition of the invocation, or of its approval alone (the invocation is gone). */
export type Settlement = Transition | { invocation: null; events: readonly ExecEvent[] };

export class TransitionSettler {
  readonly #store: ExecInvocationsStore;
  readonly #registry: AgentRegistry;
  readonly #live: LiveInvocations;

  constructor(store: ExecInvocationsStore, registry: AgentRegistry, live: LiveInvocations) {
    this.#store = store;
    this.#registry = registry;
    this.#live = live;
  }

  /**
   * Commits a transition that ends (or changes) an invocation, with the approval it touches; then stops
   * the agent if it was running it, forgets its live output and tells the readers. False, with nothing
   * done, when another writer changed either record since `before` and the approval were read.
   */
  async settle(before: Invocation | null, t: Settlement, approval: Change['approval']): Promise<boolean> {
    const projectId = t.invocation?.projectId ?? approval?.to.projectId ?? before?.projectId ?? '';
    const invocation = before && t.invocation && { from: before.status, to: t.invocation };
    if (!(await this.#store.commit({ projectId, invocation, approval, events: t.events }))) return false;
    const inv = t.invocation;
    if (!inv) return true;
    const wasOut = before !== null && (before.status === 'dispatched' || before.status === 'running');
    if (machine.isTerminal(inv.status)) {
      this.#live.ended(inv.id);
      // A timeout or a cancel: the agent stops (a result or an offline agent needs no word).
      if (wasOut && before?.agentId && (inv.error?.code === 'timeout' || inv.status === 'cancelled')) this.#registry.cancel(before.agentId, inv.id);
    }
    this.#live.status(inv.id, inv.status);
    return true;
  }
}
