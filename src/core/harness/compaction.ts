/**
 * Context compaction (X-Service-Augment-Compaction; SPEC request headers: with it off, an overflow still
 * returns 400). When input plus requested output would not fit the model's window, the oldest turns are
 * summarised by one model call on the same endpoint (an extra billed turn) and replaced by the summary:
 * - kept as they are: the leading system/developer messages, and the current turn (the last user message
 *   and everything after it);
 * - summarised: everything in between, as one transcript; a transcript longer than the summary call's own
 *   window allows is cut from its oldest end (a marker says so);
 * - the summary stands where they stood, as one system message.
 * If the compacted request still does not fit, the original 400 is returned. The call is made in
 * app/chat/chat-harness.ts; this file plans it and splices its answer. Pure.
 */
type Json = Record<string, unknown>;

export const COMPACTION_PROMPT =
  'Summarise the conversation below for the assistant who will continue it. Keep every fact, decision, name, number, ' +
  'open question and tool result that later turns may need; drop greetings and repetition. Answer with the summary only.';
export const SUMMARY_PREFIX = 'Summary of the earlier conversation (compacted by the gateway): ';
const SUMMARY_MAX_TOKENS = 512;
const CUT_MARKER = '[earlier part of the conversation cut]\n';

export interface CompactionPlan {
  readonly head: Json[];
  readonly old: Json[];
  readonly tail: Json[];
}

export function planCompaction(messages: readonly Json[]): CompactionPlan | null {
  let start = 0;
  while (start < messages.length && (messages[start]?.role === 'system' || messages[start]?.role === 'developer')) start++;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= start; i--) {
    if (messages[i]?.role === 'user') {
      lastUser = i;
      break;
    }
  }
  const tailFrom = lastUser === -1 ? messages.length - 1 : lastUser;
  if (tailFrom <= start) return null;
  return { head: messages.slice(0, start), old: messages.slice(start, tailFrom), tail: messages.slice(tailFrom) };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[]).map((p) => (typeof p.text === 'string' ? p.text : `[${String(p.type ?? 'part')}]`)).join('\n');
}

export function transcript(messages: readonly Json[]): string {
  return messages
    .map((m) => {
      const calls = Array.isArray(m.tool_calls)
        ? (m.tool_calls as Json[]).map((c) => ` [called ${String(((c.function ?? {}) as Json).name ?? '')}(${String(((c.function ?? {}) as Json).arguments ?? '')})]`).join('')
        : '';
      return `${String(m.role)}: ${textOf(m.content)}${calls}`;
    })
    .join('\n');
}

/** Output tokens the summary may use: a slice of the window, so the compacted request has room. */
export function summaryMaxTokens(window: number): number {
  return Math.max(16, Math.min(SUMMARY_MAX_TOKENS, Math.floor(window / 8)));
}

/**
 * The summary call's body. Its input is bounded by bytes (an upper bound on tokens), so the call itself
 * always fits the window it is made against.
 */
export function summaryRequest(plan: CompactionPlan, upstreamModel: string, window: number): Json {
  const maxTokens = summaryMaxTokens(window);
  const room = Math.max(64, window - maxTokens - Buffer.byteLength(COMPACTION_PROMPT) - 32);
  let text = transcript(plan.old);
  const bytes = Buffer.from(text);
  if (bytes.length > room) text = CUT_MARKER + bytes.subarray(bytes.length - room + CUT_MARKER.length).toString('utf8').replace(/^\uFFFD+/, '');
  return {
    model: upstreamModel,
    messages: [
      { role: 'system', content: COMPACTION_PROMPT },
      { role: 'user', content: text },
    ],
    max_tokens: maxTokens,
    temperature: 0,
    stream: false,
  };
}

export function compactedMessages(plan: CompactionPlan, summary: string): Json[] {
  return [...plan.head, { role: 'system', content: SUMMARY_PREFIX + summary }, ...plan.tail];
}
