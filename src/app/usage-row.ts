/**
 * The usage ledger's row, built in one place (issue 33, "one house"): every use case that bills a model
 * turn (chat, the chat harness, Responses passthrough, multimodel dispatches, audio and realtime, the
 * prompt-only routes) passes what it knows, and the rules for each field live here. The ledger takes only
 * a `BilledRow` (core/store/usage-store.ts), which nothing but `usageRow` makes, so a row assembled by
 * hand elsewhere does not type-check (test/unit/app/usage-row.test.ts also scans src/ for casts to it).
 *
 * Cost: the row is one object literal, every field named in one order (one hidden class, as
 * store/charging-ledger.ts `pricedRow`); no closure, no intermediate object.
 */
import type { BilledRow } from '../core/store/usage-store.js';
import type { UpstreamAbort } from '../upstream/upstream-client.js';
import type { Outcome } from './chat/chat-dispatch.js';

/**
 * Token counts as the routes hold them: a chat turn's TurnUsage, an audio call's AudioUsage and an
 * embedding's EmbeddingUsage all fit as they are (no conversion object); what a route does not count is 0
 * (reasoning: null).
 */
export interface RowUsage {
  readonly promptTokens: number;
  readonly completionTokens?: number;
  readonly cachedTokens?: number;
  readonly reasoningTokens?: number | null;
  readonly source: 'upstream' | 'estimated';
}

/** Who is billed; a chat turn's `account` and audio's AudioAccount fit as they are. */
export interface RowAccount {
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly keyId: string;
}

export interface UsageRowInput {
  /** The request id, or `<request id>.<label>` / an item id for the extra turns of one request. */
  readonly requestId: string;
  readonly account: RowAccount;
  readonly endpointId: string;
  /** The ledger's route label (chat, router, audio, realtime, embeddings, ...). */
  readonly route: string;
  /** The service tier's lane and its price multiplier; routes without tiers pass `default` and 1. */
  readonly lane: string;
  readonly multiplier: number;
  readonly outcome: Outcome;
  /** null: nothing was reported or counted (a failed call): zero tokens, `estimated`. */
  readonly usage: RowUsage | null;
  /** performance.now() when the call started (its UpstreamDeadline's `started`). */
  readonly started: number;
  /** Wall-clock Unix ms of the row (services.now()). */
  readonly createdAt: number;
  /** The call's abort signal, where the client noted the server it reached and its retries; null: no upstream call of its own (a realtime segment). */
  readonly call: UpstreamAbort | null;
  /** Time to the first byte of a streamed answer (the access log's `ttftMs`); absent/undefined: not streamed or not measured. */
  readonly ttftMs: number | null | undefined;
  /** The catalogue code of the client's error, where the route knows it. */
  readonly errorCode: string | null;
}

/**
 * The one row constructor. Rules: tokens from `usage` (0 where not counted, reasoning null), its source or
 * `estimated` without one; latency from `started` to now; `errorCode` only on an error or timeout row (a
 * timeout without a code is `timeout`); the upstream server and retries from the call's signal.
 */
export function usageRow(i: UsageRowInput): BilledRow {
  const { usage, outcome, call } = i;
  const failed = outcome === 'error' || outcome === 'timeout';
  return {
    requestId: i.requestId,
    projectId: i.account.projectId,
    workspaceId: i.account.workspaceId,
    endpointId: i.endpointId,
    keyId: i.account.keyId,
    route: i.route,
    promptTokens: usage?.promptTokens ?? 0,
    completionTokens: usage?.completionTokens ?? 0,
    cachedTokens: usage?.cachedTokens ?? 0,
    reasoningTokens: usage?.reasoningTokens ?? null,
    serviceTier: i.lane,
    tierMultiplier: i.multiplier,
    status: outcome,
    usageSource: usage?.source ?? 'estimated',
    latencyMs: performance.now() - i.started,
    createdAt: i.createdAt,
    ttftMs: i.ttftMs ?? null,
    errorCode: failed ? (i.errorCode ?? (outcome === 'timeout' ? 'timeout' : null)) : null,
    upstreamServer: call?.server ?? null,
    retries: call === null ? null : call.retries,
  } as BilledRow;
}
