/**
 * The opt-in agentic harness on the answer side: fabricated tool calls, corrective retries and the chat
 * tool allowlist (core/harness). They need the whole answer before anything reaches the client, so a turn
 * with one of them on (and tools to call) is served from buffered upstream turns; a streaming client gets
 * the finished answer as SSE chunks, as the x_exec bridge sends it. Every model turn is billed with a row
 * of its own (`<request id>`, then `<request id>.t2`, `.t3`); the answer's usage is their sum.
 */
import { addUsage, completionChunks } from '../../core/chat/exec-bridge.js';
import type { HarnessFlags } from '../../core/chat/header-flags.js';
import { cappedChoice, correctionMessages, findMalformedCall, MAX_CORRECTIVE_RETRIES } from '../../core/harness/corrective-retry.js';
import { realizeTextCalls } from '../../core/harness/fabricated-tool-calls.js';
import { allowDeclaredCalls } from '../../core/harness/tool-allowlist.js';
import { toolNames } from '../../core/harness/tool-choice-demotion.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import type { TurnSink } from '../turn-io.js';
import type { ChatServices } from './chat-dispatch.js';
import { exchangeOnce, type HarnessCall } from './chat-harness-call.js';
import { AUGMENTED_HEADER } from './chat-harness.js';

type Json = Record<string, unknown>;

/** Whether the answer side engages: one of its features on, and tools the model may call. */
export function repairsAnswers(flags: HarnessFlags, chat: ChatRequest): boolean {
  if (!flags.fabricatedToolCalls && !flags.correctiveRetries && !flags.toolAllowlist) return false;
  return (chat.tools?.length ?? 0) > 0 && chat.tool_choice !== 'none';
}

export interface RepairedTurn extends HarnessCall {
  readonly reply: TurnSink;
  /** The upstream body a plain turn would send (model replaced, request-side features applied). */
  readonly body: Buffer;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly flags: HarnessFlags;
  readonly acted: string[];
  /** As TurnRequest.complete: runs on the finished answer before it is sent (audio output). */
  readonly complete?: ((body: Record<string, unknown>) => Promise<void>) | undefined;
}

export async function serveRepairedTurn(services: ChatServices, t: RepairedTurn): Promise<void> {
  try {
    await repairLoop(services, t);
  } catch (err) {
    // The client is gone: nothing to answer (each turn was billed as it ended).
    if (!t.req.aborted) throw err;
  }
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

async function repairLoop(services: ChatServices, t: RepairedTurn): Promise<void> {
  const base = JSON.parse(t.body.toString('utf8')) as Json;
  base.stream = false;
  delete base.stream_options;
  const declared = new Set(toolNames(base));
  // SPEC Passthrough 3: the client's cap (max_completion_tokens wins) bounds the output of all turns.
  const capField = typeof base.max_completion_tokens === 'number' ? 'max_completion_tokens' : typeof base.max_tokens === 'number' ? 'max_tokens' : null;
  const cap = capField ? num(base[capField]) : null;
  const messages = Array.isArray(base.messages) ? [...(base.messages as Json[])] : [];
  const mark = (feature: string): void => {
    if (!t.acted.includes(feature)) t.acted.push(feature);
  };
  const idPrefix = `call_${t.req.requestId.replace(/^chatcmpl-/, '')}`;
  let usage: Json | null = null;
  let spent = 0;
  for (let attempt = 0; ; attempt++) {
    const body: Json = { ...base, messages };
    if (capField && cap !== null) body[capField] = cap - spent;
    // A non-streamed first turn is the plain turn's bytes: the repair shows only in what comes back.
    const { completion } = await exchangeOnce(services, t, attempt === 0 && !t.stream ? t.body : body, attempt === 0 ? null : `t${attempt + 1}`);
    const turnUsage = completion.usage as Json;
    usage = usage ? addUsage(usage, turnUsage) : turnUsage;
    spent += num(turnUsage.completion_tokens);
    let choices = Array.isArray(completion.choices) ? (completion.choices as Json[]) : [];
    if (t.flags.fabricatedToolCalls) {
      choices = choices.map((c) => {
        const real = realizeTextCalls(c, declared, (i) => `${idPrefix}_${num(c.index)}_${i}`);
        if (real) mark('fabricated-tool-calls');
        return real ?? c;
      });
    }
    const only = choices.length === 1 ? choices[0] : undefined;
    const bad = t.flags.correctiveRetries && only ? findMalformedCall(only, declared) : null;
    if (bad && only) {
      mark('corrective-retries');
      if (cap !== null && spent >= cap) return answer(t, { ...completion, choices: [cappedChoice(only)], usage });
      if (attempt < MAX_CORRECTIVE_RETRIES) {
        messages.push(...correctionMessages(only, bad));
        continue;
      }
    }
    if (t.flags.toolAllowlist) {
      choices = choices.map((c) => {
        const allowed = allowDeclaredCalls(c, declared);
        if (allowed) mark('tool-allowlist');
        return allowed ?? c;
      });
    }
    return answer(t, { ...completion, choices, usage });
  }
}

async function answer(t: RepairedTurn, body: Json): Promise<void> {
  const usage = (body.usage ?? {}) as Json;
  t.req.log.promptTokens = num(usage.prompt_tokens);
  t.req.log.completionTokens = num(usage.completion_tokens);
  if (t.acted.length > 0) t.reply.setHeader(AUGMENTED_HEADER, t.acted.join(','));
  if (!t.stream) {
    if (t.complete) await t.complete(body);
    return t.reply.json(200, body);
  }
  t.reply.setHeader('Cache-Control', 'no-cache');
  t.reply.beginStream(200, 'text/event-stream');
  let out = '';
  for (const chunk of completionChunks(body, t.includeUsage)) out += `data: ${JSON.stringify(chunk)}\n\n`;
  t.reply.write(`${out}data: [DONE]\n\n`);
  t.reply.endStream();
}
