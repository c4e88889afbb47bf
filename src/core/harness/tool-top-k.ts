/**
 * Tool top-k (X-Service-Augment-Tool-Top-K; SPEC: off everywhere, X-Service-Augment: on included; only its
 * own header enables it). A turn declaring more than k tools keeps the k whose description is most similar
 * to the turn, by embedding (the project's embedding endpoint; the call is made in app/chat/chat-harness.ts).
 *
 * k: DEFAULT_TOOL_TOP_K, or the companion header X-Service-Augment-Tool-Top-K-Count (an integer from 1 to
 * 128; anything else is ignored, like the SLO headers). Kept regardless of similarity, and counted in k:
 * the function `tool_choice` names, and functions the history already called (the model must still be
 * able to read its own calls). The kept tools stay in the client's order. Pure.
 */
import { cosine } from '../vectors.js';

type Json = Record<string, unknown>;

export const DEFAULT_TOOL_TOP_K = 8;
export const TOOL_TOP_K_COUNT_HEADER = 'x-service-augment-tool-top-k-count';
const MAX_K = 128;

export function topKCount(headers: Readonly<Record<string, string>>): number {
  const raw = headers[TOOL_TOP_K_COUNT_HEADER]?.trim();
  if (raw === undefined || !/^\d{1,3}$/.test(raw)) return DEFAULT_TOOL_TOP_K;
  const k = Number(raw);
  return k >= 1 && k <= MAX_K ? k : DEFAULT_TOOL_TOP_K;
}

/** What a tool is embedded as: its name (words split), description and parameter names. */
export function toolText(tool: Json): string {
  const fn = (tool.function ?? {}) as Json;
  const name = String(fn.name ?? '').replace(/[_-]+/g, ' ');
  const params = ((fn.parameters ?? {}) as Json).properties;
  const paramNames = params && typeof params === 'object' ? Object.keys(params).join(' ') : '';
  return [name, typeof fn.description === 'string' ? fn.description : '', paramNames].filter((s) => s.length > 0).join('. ');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[]).map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}

/** The turn as the similarity query: the last user message, else the last message with text. */
export function turnQuery(messages: readonly Json[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user' && textOf(messages[i]?.content)) return textOf(messages[i]?.content);
  for (let i = messages.length - 1; i >= 0; i--) if (textOf(messages[i]?.content)) return textOf(messages[i]?.content);
  return '';
}

/** Names the turn must keep whatever their similarity. */
export function pinnedTools(body: Json): Set<string> {
  const pinned = new Set<string>();
  const choice = body.tool_choice;
  if (choice && typeof choice === 'object') pinned.add(String(((choice as Json).function as Json | undefined)?.name ?? ''));
  for (const m of Array.isArray(body.messages) ? (body.messages as Json[]) : []) {
    if (Array.isArray(m.tool_calls)) for (const c of m.tool_calls as Json[]) pinned.add(String(((c.function ?? {}) as Json).name ?? ''));
  }
  return pinned;
}

/**
 * Indexes of the tools to keep, ascending. Pinned tools first (up to k), then by similarity, ties by
 * the client's order so the result is deterministic.
 */
export function selectTopK(names: readonly string[], pinned: ReadonlySet<string>, query: Float32Array, tools: readonly Float32Array[], k: number): number[] {
  const ranked = tools.map((v, i) => ({ i, pinned: pinned.has(names[i] ?? ''), score: cosine(query, v) }));
  ranked.sort((a, b) => (a.pinned !== b.pinned ? (a.pinned ? -1 : 1) : b.score - a.score || a.i - b.i));
  return ranked
    .slice(0, k)
    .map((r) => r.i)
    .sort((a, b) => a - b);
}

/** The body with only the kept tools; null when there is nothing to cut. */
export function keepTools(body: Json, keep: readonly number[]): Json | null {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  if (keep.length >= tools.length) return null;
  return { ...body, tools: keep.map((i) => tools[i]) };
}
