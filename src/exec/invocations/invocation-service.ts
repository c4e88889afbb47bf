/**
 * The invocations' use cases (docs/exec.md "Invocations", "Approvals", "Durability"): create, read,
 * cancel, approve; dispatch through the agent registry; and what agents report (AgentReports). Decisions
 * are the pure state machines' (core/exec); this module loads records, applies a transition, commits the
 * new state with its events in one transaction (transition-settler.ts), then tells the agent and the live
 * readers. The work no request asks for (timeouts, approval lapses, recovery, reconciling with other
 * instances) is invocation-upkeep.ts's; the service exposes it.
 *
 * Output of a dispatched invocation is kept in memory (invocation-live.ts) as it arrives and written
 * with the terminal state.
 *
 * Several instances share the store (issue 12), and any of them may apply a transition to any invocation
 * (a client's cancel, a clock's timeout, a queued retry), each from what it read a moment before. Every
 * commit is therefore guarded by the state the transition was computed from (store/exec-invocations/exec-invocations-store.ts), and
 * whatever follows a commit (the send to the agent, telling readers) is done only by the instance whose
 * commit won: an event is written once, an invocation is dispatched to one agent. Only the instance that
 * dispatched an invocation holds its agent's socket, so when another instance ends it, `reconcile` (on
 * the clock, invocation-upkeep.ts) tells the agent to stop and this instance's readers that it is over.
 */
import type { AgentOfflineReason, AgentRegistry, AgentReports } from '../../core/exec/agent-registry.js';
import * as approvals from '../../core/exec/approval-machine.js';
import type { Approval, ApprovalPolicy, Requester } from '../../core/exec/approval-machine.js';
import { execEvents } from '../../core/exec/exec-events.js';
import type { InvocationIds } from '../../core/exec/invocation-ids.js';
import * as machine from '../../core/exec/invocation-machine.js';
import type { Invocation } from '../../core/exec/invocation-machine.js';
import { checkArguments, type ArgumentsValidator } from '../../core/exec/tool-arguments.js';
import { GatewayError } from '../../errors.js';
import type { Change, ExecInvocationsStore, Page, PageQuery } from '../../core/store/exec-invocations-store.js';
import { LiveInvocations } from './invocation-live.js';
import { InvocationDispatcher } from './invocation-dispatcher.js';
import { DUE_BATCH, InvocationUpkeep } from './invocation-upkeep.js';
import type { InvocationWatch, WatchListener } from './invocation-watch.js';
import { TransitionSettler } from './transition-settler.js';

/** docs/exec.md: Idempotency-Keys are kept 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export { DUE_BATCH } from './invocation-upkeep.js';

export interface InvocationServiceDeps {
  readonly store: ExecInvocationsStore;
  readonly registry: AgentRegistry;
  /** Checks arguments against a tool's schema off the event loop (issue 31). */
  readonly argumentsValidator: ArgumentsValidator;
  readonly now: () => number;
  readonly ids: InvocationIds;
  /** The workspace's approval settings (config `workspaces[].exec`, defaults for the others). */
  readonly policyOf: (projectId: string, workspaceId: string) => ApprovalPolicy;
  readonly outputCapBytes: number;
  /**
   * How recovery fails what a stopped instance had out: `gateway_restarted` (one process on its store:
   * the gateway itself restarted), or `agent_offline` (replicas sharing PostgreSQL: the agent's replica
   * died, which for the invocation is its agent going away, as a disconnect).
   */
  readonly abandonedAs?: 'gateway_restarted' | 'agent_offline';
}

export interface CreateRequest {
  readonly projectId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly timeoutMs: number;
  readonly idempotency: { readonly key: string; readonly bodyHash: string } | null;
  /** Who asks: recorded on the approval, so that they never decide it (docs/exec.md "Who decides"). */
  readonly requester: Requester;
}

export class InvocationService implements AgentReports {
  readonly #deps: InvocationServiceDeps;
  readonly #live: LiveInvocations;
  readonly #settler: TransitionSettler;
  readonly #upkeep: InvocationUpkeep;
  readonly #dispatcher: InvocationDispatcher;
  /** The last report of an invocation being applied, by id: the next one runs after it. */
  readonly #reports = new Map<string, Promise<void>>();
  /** Agents going offline whose invocations are being failed (before they are queued in `#reports`). */
  readonly #offline = new Set<Promise<void>>();

  constructor(deps: InvocationServiceDeps) {
    this.#deps = deps;
    this.#live = new LiveInvocations(deps.outputCapBytes);
    this.#settler = new TransitionSettler(deps.store, deps.registry, this.#live);
    this.#dispatcher = new InvocationDispatcher({ ...deps, live: this.#live });
    const inFlight = { reporting: (id: string) => this.#reports.has(id), claiming: (id: string) => this.#dispatcher.claiming(id) };
    this.#upkeep = new InvocationUpkeep({ ...deps, live: this.#live, settler: this.#settler, ...inFlight });
  }

  /** The live readers (the SSE events route, the chat bridge). */
  get watch(): InvocationWatch {
    return this.#live.watch;
  }

  /** 201 when created; a replay of the same Idempotency-Key and body returns the first (created: false). */
  async create(req: CreateRequest): Promise<{ invocation: Invocation; created: boolean }> {
    const { store, registry, ids } = this.#deps;
    const now = this.#deps.now();
    if (req.idempotency) {
      const held = await store.idempotencyKey(req.projectId, req.idempotency.key, now);
      if (held) return { invocation: await this.#replay(held.bodyHash === req.idempotency.bodyHash ? held.invocationId : null), created: false };
    }
    const agent = registry.candidates(req.projectId, req.workspaceId, req.toolName)[0];
    const tool = agent?.tools.get(req.toolName);
    if (!tool) {
      throw new GatewayError('exec_tool_not_found', {
        param: 'tool_name',
        message: `No online agent serving workspace ${req.workspaceId} offers a tool named ${JSON.stringify(req.toolName)}.`,
      });
    }
    await checkArguments(this.#deps.argumentsValidator, tool.name, tool.input_schema, req.arguments, req.projectId);
    const policy = this.#deps.policyOf(req.projectId, req.workspaceId);
    const id = ids.invocationId();
    const approvalId = approvals.needsApproval(tool.risk, tool.name, policy) ? ids.approvalId() : null;
    const inv = machine.createInvocation(
      { id, projectId: req.projectId, workspaceId: req.workspaceId, toolName: tool.name, arguments: req.arguments, risk: tool.risk, timeoutMs: req.timeoutMs, approvalId },
      now,
    );
    const requested =
      approvalId === null
        ? null
        : approvals.requestApproval({ id: approvalId, projectId: req.projectId, invocationId: id, workspaceId: req.workspaceId, toolName: tool.name, risk: tool.risk, chain: policy.chain, requester: req.requester }, now);
    const idem = req.idempotency ? { ...req.idempotency, expiresAt: now + IDEMPOTENCY_TTL_MS } : null;
    const outcome = await store.create(inv, requested?.approval ?? null, requested?.events ?? [], idem, now);
    if (outcome.kind === 'conflict') return { invocation: await this.#replay(null), created: false };
    if (outcome.kind === 'replayed') return { invocation: this.#live.withOutput(outcome.invocation), created: false };
    return { invocation: inv.status === 'queued' ? await this.#dispatcher.dispatch(inv) : inv, created: true };
  }

  async #replay(invocationId: string | null): Promise<Invocation> {
    const inv = invocationId === null ? null : await this.#deps.store.invocation(invocationId);
    if (!inv) throw new GatewayError('exec_idempotency_conflict', { param: 'Idempotency-Key', message: 'This Idempotency-Key was used with a different body in the last 24 hours; send a new key.' });
    return this.#live.withOutput(inv);
  }

  /** 404 invocation_not_found for another project's id too (SPEC: not 403). */
  async get(projectId: string, id: string): Promise<Invocation> {
    const inv = await this.#deps.store.invocation(id);
    if (!inv || inv.projectId !== projectId) {
      throw new GatewayError('invocation_not_found', { param: 'invocation_id', message: `Project ${projectId} has no invocation ${JSON.stringify(id.slice(0, 64))}.` });
    }
    return this.#live.withOutput(inv);
  }

  /** Newest first; null when `after` names no invocation of the project. */
  async list(projectId: string, q: PageQuery): Promise<Page<Invocation> | null> {
    const page = await this.#deps.store.listInvocations(projectId, q);
    return page && { items: page.items.map((i) => this.#live.withOutput(i)), hasMore: page.hasMore };
  }

  listApprovals(projectId: string, q: PageQuery): Promise<Page<Approval> | null> {
    return this.#deps.store.listApprovals(projectId, q);
  }

  async cancel(projectId: string, id: string): Promise<Invocation> {
    // A lost commit means another writer moved the invocation on (dispatched, ended) since it was read:
    // cancel what it is now. States only move forward, so this ends.
    for (;;) {
      const inv = await this.get(projectId, id);
      const t = machine.cancel(inv, this.#deps.now());
      if (!t) throw new GatewayError('invocation_terminal', { param: 'invocation_id', message: `Invocation ${id} is already ${inv.status}; only a queued, pending or running invocation can be cancelled.` });
      const approval = inv.approvalId === null ? null : await this.#deps.store.approval(inv.approvalId);
      const withdrawn = approval ? approvals.withdraw(approval, this.#deps.now()) : null;
      if (await this.#settler.settle(inv, t, approval && withdrawn && { from: approval, to: withdrawn })) return t.invocation;
    }
  }

  /** A running reader: the invocation as it is now, then every change until it ends. */
  async follow(projectId: string, id: string, listener: WatchListener): Promise<{ invocation: Invocation; stop: () => void }> {
    const invocation = await this.get(projectId, id);
    if (machine.isTerminal(invocation.status)) return { invocation, stop: () => undefined };
    // What the reader was given: reconcile tells it only of later moves made by other instances.
    this.#live.given(id, invocation.status);
    const stop = this.watch.subscribe(id, listener);
    return { invocation, stop };
  }

  async approval(projectId: string, id: string): Promise<Approval> {
    const a = await this.#deps.store.approval(id);
    if (!a || a.projectId !== projectId) throw new GatewayError('approval_not_found', { param: 'approval_id', message: `Project ${projectId} has no approval ${JSON.stringify(id.slice(0, 64))}.` });
    return a;
  }

  /** Accepted: the invocation is ready, and dispatched at once if an agent is there. */
  async accept(projectId: string, id: string, decidedBy: string): Promise<Approval> {
    const { store } = this.#deps;
    // A lost commit: another decision, an escalation or a cancel came first; decide again on what it is
    // now (a decided approval answers 409). States and stages only move forward, so this ends.
    for (;;) {
      const a = await this.approval(projectId, id);
      const now = this.#deps.now();
      const t = approvals.accept(a, decidedBy, now) ?? notPending(a);
      const inv = await store.invocation(a.invocationId);
      const ready = inv ? machine.approve(inv, now) : null;
      const change: Change = { projectId: a.projectId, invocation: inv && ready && { from: inv.status, to: ready }, approval: { from: a, to: t.approval }, events: t.events };
      if (!(await store.commit(change))) continue;
      if (ready) {
        this.#live.status(ready.id, ready.status);
        await this.#dispatcher.dispatch(ready);
      }
      return t.approval;
    }
  }

  async reject(projectId: string, id: string, decidedBy: string, reason: string | null): Promise<Approval> {
    // Retried on a lost commit, as accept.
    for (;;) {
      const a = await this.approval(projectId, id);
      const now = this.#deps.now();
      const t = approvals.reject(a, decidedBy, reason, now) ?? notPending(a);
      const inv = await this.#deps.store.invocation(a.invocationId);
      const message = reason ? `The approval was rejected: ${reason}` : 'The approval was rejected.';
      const failed = inv ? machine.fail(inv, 'approval_rejected', message, now, t.events) : null;
      if (await this.#settler.settle(inv, failed ?? { invocation: null, events: t.events }, { from: a, to: t.approval })) return t.approval;
    }
  }

  /** Queued invocations look for an agent again (one came online, or the clock's periodic retry). */
  retryQueued(): Promise<void> {
    return this.#dispatcher.retryQueued();
  }

  // ---- what agents report (AgentReports) ----

  /**
   * An invocation's reports are applied one after the other, in the order the agent sent them (each
   * awaits the store), after the claim that dispatched it; a failure is logged by `onReportError`.
   */
  #inOrder(invocationId: string, fn: () => Promise<void>): Promise<void> {
    const previous = this.#reports.get(invocationId) ?? this.#dispatcher.claimOf(invocationId) ?? Promise.resolve();
    const next = previous.then(fn);
    const settledNext = next.then(() => undefined, () => undefined);
    this.#reports.set(invocationId, settledNext);
    void settledNext.then(() => {
      if (this.#reports.get(invocationId) === settledNext) this.#reports.delete(invocationId);
    });
    return next;
  }

  output(agentId: string, invocationId: string, data: string): Promise<void> {
    return this.#inOrder(invocationId, async () => {
      if (!this.#live.serves(invocationId)) return;
      const inv = await this.#deps.store.invocation(invocationId);
      if (!inv || inv.agentId !== agentId || machine.isTerminal(inv.status)) return;
      const running = machine.markRunning(inv);
      // Lost: another instance ended it a moment ago (a timeout, a cancel); reconcile stops the agent.
      if (running && !(await this.#deps.store.commit({ projectId: inv.projectId, invocation: { from: inv.status, to: running }, approval: null, events: [] }))) return;
      if (running) this.#live.status(invocationId, running.status);
      this.#live.append(invocationId, data);
    });
  }

  result(agentId: string, invocationId: string, result: { exitCode: number; output: string | null; error: string | null; outputTruncated?: boolean }): Promise<void> {
    return this.#inOrder(invocationId, async () => {
      const inv = await this.#deps.store.invocation(invocationId);
      if (!this.#live.serves(invocationId) || !inv || inv.agentId !== agentId) return;
      // The result's `output`, when sent, is the last chunk (docs/exec.md protocol).
      if (result.output) this.#live.append(invocationId, result.output);
      if (result.outputTruncated === true) this.#live.cutByAgent(invocationId);
      const t = machine.finish(this.#live.withOutput(inv), { exitCode: result.exitCode, error: result.error }, this.#deps.now());
      // Ended elsewhere first (t null: before the result came; a lost commit: while it was applied): the
      // agent is done, so its output is all there is to forget.
      if (!t || !(await this.#settler.settle(inv, t, null))) this.#live.forget(invocationId);
    });
  }

  offline(agent: { readonly id: string; readonly projectId: string }, reason: AgentOfflineReason, running: readonly string[]): Promise<void> {
    const work = this.#failOffline(agent, reason, running);
    const tracked = work.then(() => undefined, () => undefined);
    this.#offline.add(tracked);
    void tracked.then(() => this.#offline.delete(tracked));
    return work;
  }

  /**
   * Resolves once every agent report received so far is applied (results, output, offline failures): a
   * graceful stop waits for this before closing the store, so what its drain settled is written.
   */
  async settled(): Promise<void> {
    for (;;) {
      const pending = [...this.#offline, ...this.#reports.values(), ...this.#dispatcher.claims()];
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  /**
   * Every invocation the agent had not finished fails, each with its exec.agent_offline. An agent that ran
   * nothing still went offline (SPEC: "Agent lost its lease and went offline"): one exec.agent_offline
   * for it alone, `invocation_id` null, so a subscriber watching agents hears of every departure.
   */
  async #failOffline({ id: agentId, projectId }: { readonly id: string; readonly projectId: string }, reason: AgentOfflineReason, running: readonly string[]): Promise<void> {
    const { store } = this.#deps;
    const ids = new Set([...running, ...(await store.activeOfAgent(agentId)).map((i) => i.id)]);
    if (ids.size === 0) {
      const event = execEvents.agentOffline({ invocationId: null, agentId, reason, at: this.#deps.now() });
      await store.commit({ projectId, invocation: null, approval: null, events: [event] });
      return;
    }
    for (const id of ids) {
      await this.#inOrder(id, async () => {
        const inv = await store.invocation(id);
        if (!inv || inv.agentId !== agentId) return;
        const now = this.#deps.now();
        const before = [execEvents.agentOffline({ invocationId: id, agentId, reason, at: now })];
        const message =
          reason === 'gateway_stopping'
            ? 'The gateway stopped (graceful stop) while the invocation was running: it had not finished by the drain deadline.'
            : `The agent running the invocation went offline (${reason}).`;
        const t = machine.fail(this.#live.withOutput(inv), 'agent_offline', message, now, before);
        // Ended elsewhere first: the agent is gone, nothing to tell it.
        if (!t || !(await this.#settler.settle(inv, t, null))) this.#live.forget(id);
      });
    }
  }

  online(_agentId: string): Promise<void> {
    return this.retryQueued();
  }

  // ---- the clock's work and recovery (invocation-upkeep.ts) ----

  /** Timeouts whose deadline has come; the agent is told to stop. */
  expireDue(limit = DUE_BATCH): Promise<number> {
    return this.#upkeep.expireDue(limit);
  }

  /** Approval stages that lapsed: escalations, and expiries that fail their invocation. */
  lapseDue(limit = DUE_BATCH): Promise<number> {
    return this.#upkeep.lapseDue(limit);
  }

  /** At start, and whenever a sibling instance is found dead: fails what a stopped instance had out. */
  recover(): Promise<number> {
    return this.#upkeep.recover();
  }

  /** What other instances did to invocations this one serves or has readers of (issue 12). */
  reconcile(): Promise<void> {
    return this.#upkeep.reconcile();
  }
}

function notPending(a: Approval): never {
  throw new GatewayError('approval_not_pending', { param: 'approval_id', message: `Approval ${a.id} is already ${a.state}.` });
}
