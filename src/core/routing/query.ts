/**
 * What the router reads from a chat request before any I/O: the composed query (SPEC behaviour 5: the
 * whole thread), the over-estimated input size (behaviour 8), the capabilities the request needs, the
 * affinity key (behaviour 6) and the prompt excerpt recorded with the decision. Pure.
 */
import { createHash } from 'node:crypto';
import { inputOf, type ContextInput } from '../chat/context-window.js';
import type { ReasoningOptions } from '../chat/reasoning.js';
import type { RequestNeeds } from './types.js';

export interface ThreadMessage {
  readonly role: string;
  readonly content?: unknown;
  readonly tool_calls?: unknown;
}

export interface RoutedRequest extends ContextInput, ReasoningOptions {
  readonly messages: readonly ThreadMessage[];
  readonly tools?: readonly unknown[] | null | undefined;
  readonly response_format?: { readonly type?: string } | null | undefined;
  /** The tool bridge's opt-in (docs/exec.md "Chat tool bridge"), kept on the parsed body. */
  readonly x_exec?: unknown;
}

/** The composed query keeps the newest text when a thread is longer than this (characters). */
export const MAX_QUERY_CHARS = 16_000;
/** SPEC "Routing decision row": query_preview is at most 500 characters. */
export const PREVIEW_CHARS = 500;
/** How much of the first later turn goes into a derived affinity key. */
export const AFFINITY_OPENING_CHARS = 256;
/** Over-estimate: English and code average ~4 UTF-8 bytes per token; 3 leaves a margin. */
const BYTES_PER_TOKEN_ESTIMATE = 3;

/** The text of a message: a string, or its text parts joined by newlines. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content as { type?: unknown; text?: unknown }[]) {
    if (part && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
  }
  return texts.join('\n');
}

/**
 * The whole thread as one text: user and assistant turns, oldest first. System and developer turns are
 * instructions, not topic, and tool results are data; both are left out. Past MAX_QUERY_CHARS the oldest
 * text is dropped, since the latest turns say most about what is asked now.
 */
export function composeQuery(messages: readonly ThreadMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    if (m.role !== 'user' && m.role !== 'assistant') continue;
    const text = textOf(m.content);
    if (text !== '') parts.push(text);
  }
  const all = parts.join('\n');
  if (all.length <= MAX_QUERY_CHARS) return all;
  return dropLoneLowSurrogate(all.slice(all.length - MAX_QUERY_CHARS));
}

/** UTF-8 bytes of everything the model reads divided by 3, plus chat framing: above any real count. */
export function estimateInputTokens(req: ContextInput): number {
  const { texts, fixedTokens } = inputOf(req);
  let bytes = 0;
  for (const t of texts) bytes += Buffer.byteLength(t);
  return Math.ceil(bytes / BYTES_PER_TOKEN_ESTIMATE) + fixedTokens;
}

export function requestedOutput(req: ContextInput): number | null {
  if (typeof req.max_completion_tokens === 'number') return req.max_completion_tokens;
  if (typeof req.max_tokens === 'number') return req.max_tokens;
  return null;
}

export function requestNeeds(req: RoutedRequest): RequestNeeds {
  let vision = false;
  let audioInput = false;
  let videoInput = false;
  let toolHistory = false;
  for (const m of req.messages) {
    if (m.role === 'tool' || (Array.isArray(m.tool_calls) && m.tool_calls.length > 0)) toolHistory = true;
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content as { type?: unknown }[]) {
      if (part?.type === 'image_url') vision = true;
      else if (part?.type === 'input_audio') audioInput = true;
      else if (part?.type === 'video_url') videoInput = true;
    }
  }
  const toolsDeclared = Array.isArray(req.tools) && req.tools.length > 0;
  const execTools = req.x_exec === true;
  const format = req.response_format?.type;
  return {
    vision,
    audioInput,
    videoInput,
    tools: toolsDeclared || toolHistory || execTools,
    toolsDeclared,
    execTools,
    structuredOutput: format === 'json_object' || format === 'json_schema',
    reasoning: asksForReasoning(req) ? { reasoning_effort: req.reasoning_effort, reasoning: req.reasoning, include_reasoning: req.include_reasoning } : null,
  };
}

/**
 * Options a model that does not reason refuses (core/chat/reasoning.ts). `exclude` and
 * `include_reasoning` alone ask for nothing: every model accepts them.
 */
function asksForReasoning(req: ReasoningOptions): boolean {
  const r = req.reasoning;
  return req.reasoning_effort !== undefined || (r !== undefined && (r.effort !== undefined || r.enabled !== undefined || r.max_tokens !== undefined));
}

/**
 * SPEC behaviour 6. The X-Conversation-Id value when sent; otherwise the first user message that carries
 * text plus the opening of the first later turn that is neither system nor developer. A single-turn
 * thread has no later turn yet, so it has no key: its first classification is recorded from the second
 * turn on (docs/decisions.md). Keys are hashed: the map never holds prompt text.
 */
export function affinityKey(conversationId: string | undefined, messages: readonly ThreadMessage[]): string | null {
  const explicit = conversationId?.trim();
  if (explicit) return `c:${sha256(explicit)}`;
  const first = messages.findIndex((m) => m.role === 'user' && textOf(m.content) !== '');
  if (first < 0) return null;
  const later = messages.slice(first + 1).find((m) => m.role !== 'system' && m.role !== 'developer');
  if (!later) return null;
  let opening = textOf(later.content);
  if (opening === '' && later.tool_calls !== undefined) opening = JSON.stringify(later.tool_calls);
  const userText = textOf(messages[first]?.content);
  return `d:${sha256(`${userText}\u0000${later.role}\u0000${opening.slice(0, AFFINITY_OPENING_CHARS)}`)}`;
}

/** The recorded prompt excerpt: the latest user turn's text, at most PREVIEW_CHARS characters. */
export function queryPreview(messages: readonly ThreadMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    if (m?.role === 'user') {
      const text = textOf(m.content);
      if (text !== '') return dropTrailingHighSurrogate(text.slice(0, PREVIEW_CHARS));
    }
  }
  return '';
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

function dropLoneLowSurrogate(s: string): string {
  const c = s.charCodeAt(0);
  return c >= 0xdc00 && c <= 0xdfff ? s.slice(1) : s;
}

function dropTrailingHighSurrogate(s: string): string {
  const c = s.charCodeAt(s.length - 1);
  return c >= 0xd800 && c <= 0xdbff ? s.slice(0, -1) : s;
}
