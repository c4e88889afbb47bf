/**
 * Fabricated tool calls (X-Service-Augment-Fabricated-Tool-Calls): a model that writes its tool call as
 * text instead of using the tool-call channel (common with self-hosted models whose chat template the
 * engine's tool parser does not know) gets the call turned into a real `tool_calls` entry. Recognized:
 * - `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (Hermes, Qwen), one or more;
 * - content that is, as a whole (optionally in a ```json fence), one such object or an array of them;
 *   `parameters` is read as a synonym of `arguments` (Llama 3's format).
 * Only calls naming a function the request declared are converted; text that merely looks like JSON is
 * left alone. The recognized text leaves `content` (null when nothing else is left) and finish_reason
 * becomes `tool_calls`. Pure; ids come from the caller.
 */
type Json = Record<string, unknown>;

const TAGGED = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
const FENCED = /^```(?:json)?\s*([\s\S]*?)\s*```$/;

interface TextCall {
  readonly name: string;
  readonly arguments: string;
}

function callOf(value: unknown, declared: ReadonlySet<string>): TextCall | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const v = value as Json;
  const name = typeof v.name === 'string' ? v.name : null;
  if (name === null || !declared.has(name)) return null;
  const args = v.arguments ?? v.parameters ?? {};
  if (typeof args === 'string') return { name, arguments: args };
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return null;
  return { name, arguments: JSON.stringify(args) };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The calls written in `content`, and what is left of it; null when it holds none. */
export function extractTextCalls(content: string, declared: ReadonlySet<string>): { calls: TextCall[]; rest: string } | null {
  const tagged: TextCall[] = [];
  const rest = content.replace(TAGGED, (_whole, inner: string) => {
    const call = callOf(parse(inner), declared);
    if (call) tagged.push(call);
    return call ? '' : _whole;
  });
  if (tagged.length > 0) return { calls: tagged, rest: rest.trim() };
  const trimmed = content.trim();
  const whole = parse(FENCED.exec(trimmed)?.[1] ?? trimmed);
  const items = Array.isArray(whole) ? whole : [whole];
  const calls = items.map((item) => callOf(item, declared));
  if (calls.length === 0 || calls.some((c) => c === null)) return null;
  return { calls: calls as TextCall[], rest: '' };
}

/** The choice with its text calls made real; null when its content holds none. */
export function realizeTextCalls(choice: Json, declared: ReadonlySet<string>, newId: (index: number) => string): Json | null {
  const message = (choice.message ?? {}) as Json;
  if (typeof message.content !== 'string' || declared.size === 0) return null;
  const found = extractTextCalls(message.content, declared);
  if (!found) return null;
  const existing = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  const made = found.calls.map((c, i) => ({ id: newId(existing.length + i), type: 'function', function: { name: c.name, arguments: c.arguments } }));
  return {
    ...choice,
    message: { ...message, content: found.rest.length > 0 ? found.rest : null, tool_calls: [...existing, ...made] },
    finish_reason: 'tool_calls',
  };
}
