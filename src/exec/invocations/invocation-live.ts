/**
 * What this instance holds of invocations beyond the store: the output of those it dispatched, kept as it
 * arrives and written with the terminal state (one write per invocation, not one per chunk; a crash loses
 * it, but a crash also fails the invocation, gateway_restarted); the live readers (`watch`); and, for
 * invocations another instance serves, the last status told to the readers here, so that each move made
 * elsewhere is told once (InvocationService.reconcile).
 */
import type { Invocation, InvocationStatus } from '../../core/exec/invocation-machine.js';
import * as machine from '../../core/exec/invocation-machine.js';
import { appendOutput, cappedOf, type CappedOutput } from '../../core/exec/output-cap.js';
import { InvocationWatch } from './invocation-watch.js';

export class LiveInvocations {
  readonly watch = new InvocationWatch();
  readonly #capBytes: number;
  /** Output so far of dispatched and running invocations, by id. */
  readonly #output = new Map<string, CappedOutput>();
  /** The last status told to this instance's readers of an invocation another instance serves. */
  readonly #seen = new Map<string, InvocationStatus>();

  constructor(outputCapBytes: number) {
    this.#capBytes = outputCapBytes;
  }

  /** Dispatched here: its output is kept from now on. */
  open(invocationId: string): void {
    this.#output.set(invocationId, cappedOf('', false));
  }

  /** Whether this instance dispatched the invocation and keeps its output. */
  serves(invocationId: string): boolean {
    return this.#output.has(invocationId);
  }

  /** Forgets the output kept here; true when there was some to forget. */
  forget(invocationId: string): boolean {
    return this.#output.delete(invocationId);
  }

  /** The invocation ended: nothing of it is kept. True when this instance served it. */
  ended(invocationId: string): boolean {
    this.#seen.delete(invocationId);
    return this.#output.delete(invocationId);
  }

  /** Output received from the agent, within the cap; what fits is told to the readers. */
  append(invocationId: string, data: string): void {
    const current = this.#output.get(invocationId);
    if (current === undefined) return;
    const { output, added } = appendOutput(current, data, this.#capBytes);
    this.#output.set(invocationId, output);
    if (added) this.watch.publish(invocationId, { kind: 'output', data: added });
  }

  /** The agent dropped output before sending it (its own cap): what is kept here is cut too. */
  cutByAgent(invocationId: string): void {
    const current = this.#output.get(invocationId);
    if (current !== undefined && !current.truncated) this.#output.set(invocationId, { ...current, truncated: true });
  }

  /** The stored record with the output received so far. */
  withOutput(inv: Invocation): Invocation {
    const live = this.#output.get(inv.id);
    return live && !machine.isTerminal(inv.status) ? { ...inv, output: live.text, outputTruncated: live.truncated } : inv;
  }

  /** Tells this instance's readers of a status; what reconcile will not tell them again. */
  status(invocationId: string, status: InvocationStatus): void {
    if (this.#seen.has(invocationId)) this.#seen.set(invocationId, status);
    this.watch.publish(invocationId, { kind: 'status', status });
  }

  /** A reader was given the invocation in this status: reconcile tells it only of later moves made elsewhere. */
  given(invocationId: string, status: InvocationStatus): void {
    if (!this.#output.has(invocationId) && !this.#seen.has(invocationId)) this.#seen.set(invocationId, status);
  }

  /** A status read from the store, of an invocation that has not ended: told here once if another instance serves it. */
  movedElsewhere(invocationId: string, status: InvocationStatus): void {
    if (this.#output.has(invocationId)) return;
    if (this.#seen.get(invocationId) !== status) this.watch.publish(invocationId, { kind: 'status', status });
    this.#seen.set(invocationId, status);
  }

  /** The invocations reconcile looks at (served or read here); the seen statuses of the others are dropped. */
  followed(): Set<string> {
    const ids = new Set([...this.#output.keys(), ...this.watch.ids()]);
    for (const id of this.#seen.keys()) if (!ids.has(id)) this.#seen.delete(id);
    return ids;
  }
}
