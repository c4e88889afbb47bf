/**
 * The answer of a playground turn on its way to the page: the turn writes through this `TurnSink`
 * (app/chat/chat-dispatch.ts) as it would write to an API client's socket, and the page's response gets the
 * very same SSE chunks, preceded by what an API client would read from the response head and the router's
 * decision row: `event: turn` (request id, endpoint, model, workspace), `event: decision` (routed turns:
 * endpoint, score, rule, reason) and `event: harness` (the features that acted, from `x-service-augmented`,
 * and the ones that were on). Backpressure and the drain deadline are the page's response's own.
 */
import type { DecisionRecord } from '../../store/decision-log.js';
import type { Reply } from '../../http/reply.js';
import type { TurnSink } from '../../app/turn-io.js';
import { GatewayError, toGatewayError } from '../../errors.js';

/** SPEC's response headers an API client would have seen, copied onto the page's response. */
const FORWARDED = /^(ratelimit-|x-ratelimit-|retry-after$|x-service-)/i;
/** Set by the turn (app/chat/chat-harness.ts): the harness features that changed the turn. */
export const AUGMENTED_HEADER = 'x-service-augmented';

export interface TurnFacts {
  readonly requestId: string;
  readonly target: 'endpoint' | 'router';
  /** The workspace the request named (null: the API's own choice). */
  readonly workspace: string | null;
  /** Harness features on for this turn (whether or not they acted). */
  readonly enabled: readonly string[];
  /** Headers the API's steps set before the answer (rate limits, routed endpoint and model). */
  readonly headers: () => readonly (readonly [string, string])[];
  /** The router's decision row for this turn, once recorded (routed turns only). */
  readonly decision: () => DecisionRecord | null;
  /** The endpoint the turn runs on, once known. */
  readonly endpoint: () => { slug: string; model: string } | null;
}

export interface TurnRelay extends TurnSink {
  /** The page's stream has begun (its head is out): a failure now is a frame, not a status. */
  readonly started: boolean;
  /** Ends a begun stream with the error envelope as a frame, then [DONE] (SPEC "Streaming events"). */
  fail(err: unknown): void;
  /** Copies the API's response headers onto the page's response (before an error answer, too). */
  forwardHeaders(): void;
}

const frame = (event: string | null, data: unknown): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

export function decisionView(row: DecisionRecord): Record<string, unknown> {
  const d = row.detail;
  return {
    endpoint: d.endpoint_slug ?? null,
    score: d.similarity_score ?? null,
    rule_id: d.rule_id ?? null,
    reason: row.routeReason,
    was_fallback: d.was_fallback ?? false,
    was_sticky: d.was_sticky ?? false,
    fallback_reason: d.fallback_reason ?? null,
    candidates: d.candidates ?? [],
  };
}

export function createTurnRelay(page: Reply, facts: TurnFacts, pageOpen: () => boolean): TurnRelay {
  const own = new Map<string, string>();
  let started = false;
  let forwarded = false;

  function forwardHeaders(): void {
    if (forwarded) return;
    forwarded = true;
    for (const [name, value] of [...facts.headers(), ...own]) if (FORWARDED.test(name)) page.setHeader(name, value);
  }

  function begin(): void {
    if (started) return;
    started = true;
    forwardHeaders();
    page.setHeader('Cache-Control', 'no-cache');
    page.setHeader('X-Service-Turn-Id', facts.requestId);
    page.beginStream(200, 'text/event-stream');
    const endpoint = facts.endpoint();
    const routedModel = facts.headers().find(([n]) => n.toLowerCase() === 'x-service-routed-model')?.[1];
    page.write(frame('turn', { request_id: facts.requestId, target: facts.target, endpoint: endpoint?.slug ?? null, model: routedModel ?? endpoint?.model ?? null, workspace: facts.workspace }));
    const decision = facts.decision();
    if (decision) page.write(frame('decision', decisionView(decision)));
    const acted = own.get(AUGMENTED_HEADER);
    page.write(frame('harness', { acted: acted ? acted.split(',') : [], enabled: facts.enabled }));
  }

  return {
    get open() {
      return pageOpen() && page.open;
    },
    get started() {
      return started;
    },
    setHeader(name, value) {
      own.set(name.toLowerCase(), value);
    },
    beginStream() {
      begin();
    },
    write(chunk) {
      return page.write(chunk);
    },
    // A buffered answer (a turn the harness repaired, served whole): one frame the page reads like a chunk.
    json(_status, body) {
      begin();
      // An error envelope (status above 200) goes as the same frame a mid-stream failure would be.
      page.write(frame(null, body));
      page.write('data: [DONE]\n\n');
      page.endStream();
    },
    onWritable(handler) {
      page.onWritable(handler);
    },
    onDrainDeadline(handler) {
      page.onDrainDeadline(handler);
    },
    endStream(last) {
      page.endStream(last);
    },
    forwardHeaders,
    fail(err) {
      if (!page.open) return;
      const e = err instanceof GatewayError ? err : toGatewayError(err);
      page.write(frame(null, e.toEnvelope()));
      page.write('data: [DONE]\n\n');
      page.endStream();
    },
  };
}
