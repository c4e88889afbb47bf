import type { PlannedChoice, PlannedTurn } from './chat-completion.js';
import type { Knobs } from './knobs.js';

// Renders a planned turn as SSE frames grouped into "ticks". A tick is what
// gets written in one cork; the writer sleeps between ticks. Choices are
// interleaved like a batching engine would: tick t carries token t of every
// choice that still has one.

export interface StreamFrame {
  text: string;
  /** Counts toward x-sim-fail-after: a content token or a tool-call delta. */
  countsForFailAfter: boolean;
}

export type StreamTick = StreamFrame[];

export interface StreamMeta {
  id: string;
  created: number;
  includeUsage: boolean;
}

interface ChunkChoice {
  index: number;
  delta: Record<string, unknown>;
  logprobs: unknown;
  finish_reason: string | null;
}

export const DONE_FRAME = 'data: [DONE]\n\n';

export function buildStreamTicks(turn: PlannedTurn, meta: StreamMeta): StreamTick[] {
  // Shared envelope text computed once; each frame splices its choice in.
  const head = `data: {"id":${JSON.stringify(meta.id)},"object":"chat.completion.chunk","created":${meta.created},"model":${JSON.stringify(turn.model)},"system_fingerprint":"sim","choices":[`;
  const frame = (choice: ChunkChoice, counts = false): StreamFrame => ({ text: `${head}${JSON.stringify(choice)}]}\n\n`, countsForFailAfter: counts });
  const finish = (c: PlannedChoice): StreamFrame => frame({ index: c.index, delta: {}, logprobs: null, finish_reason: c.finishReason });

  const ticks: StreamTick[] = [[]];
  const first = ticks[0] as StreamTick;
  for (const c of turn.choices) {
    first.push(frame({ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }));
  }
  for (const c of turn.choices) {
    const events = choiceEvents(c, turn.logprobsRequested, frame);
    if (events.length === 0) first.push(finish(c));
    events.forEach((ev, t) => {
      const tick = ticks[t + 1] ?? (ticks[t + 1] = []);
      tick.push(ev);
      if (t === events.length - 1) tick.push(finish(c));
    });
  }
  const last = ticks[ticks.length - 1] as StreamTick;
  if (meta.includeUsage) {
    last.push({ text: `${head}],"usage":${JSON.stringify(turn.usage)}}\n\n`, countsForFailAfter: false });
  }
  last.push({ text: DONE_FRAME, countsForFailAfter: false });
  return ticks;
}

function choiceEvents(c: PlannedChoice, logprobs: boolean, frame: (choice: ChunkChoice, counts?: boolean) => StreamFrame): StreamFrame[] {
  const events: StreamFrame[] = [];
  for (const token of c.reasoning) {
    events.push(frame({ index: c.index, delta: { reasoning_content: token }, logprobs: null, finish_reason: null }));
  }
  c.content.forEach((token, i) => {
    const entry = c.logprobs?.[i];
    const lp = logprobs && entry ? { content: [entry], refusal: null } : null;
    events.push(frame({ index: c.index, delta: { content: token }, logprobs: lp, finish_reason: null }, true));
  });
  c.toolCalls.forEach((call, i) => {
    const delta = { tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] };
    events.push(frame({ index: c.index, delta, logprobs: null, finish_reason: null }, true));
  });
  return events;
}

/** Wait before writing tick `t`: none for the role tick, first-token delay for the first token. */
export function delayBeforeTick(t: number, knobs: Knobs): number {
  if (t === 0) return 0;
  if (t === 1) return knobs.firstTokenDelayMs ?? knobs.delayMs;
  return knobs.delayMs;
}
