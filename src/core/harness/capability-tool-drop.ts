/**
 * Capability tool-drop (X-Service-Augment-Capability-Tool-Drop). Without it, tools or tool-call history
 * sent to a model without tool calling are refused (400 unsupported_parameter, SPEC "Chat and routing
 * errors"). With it, the turn is served instead: `tools`, `tool_choice` and `parallel_tool_calls` are
 * dropped, and the history is kept as text the model can read: an assistant's calls become lines
 * `[called <name>(<arguments>)]` in its content, and a tool result becomes a user message
 * `[result of <name or id>] <content>`. Runs before the capability check. Pure.
 */
type Json = Record<string, unknown>;

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[]).map((p) => (typeof p.text === 'string' ? p.text : '')).filter((t) => t.length > 0).join('\n');
}

function callLines(calls: Json[]): string {
  return calls
    .map((c) => {
      const fn = (c.function ?? {}) as Json;
      return `[called ${String(fn.name ?? '')}(${String(fn.arguments ?? '')})]`;
    })
    .join('\n');
}

/** Plain-text history; null when the messages carry no tool calls or results. */
export function toolHistoryAsText(messages: readonly Json[]): Json[] | null {
  const names = new Map<string, string>();
  let changed = false;
  const out = messages.map((m) => {
    const calls = m.role === 'assistant' && Array.isArray(m.tool_calls) ? (m.tool_calls as Json[]) : [];
    if (calls.length > 0) {
      changed = true;
      for (const c of calls) names.set(String(c.id ?? ''), String(((c.function ?? {}) as Json).name ?? ''));
      const { tool_calls: _t, ...rest } = m;
      const said = text(m.content);
      return { ...rest, content: said ? `${said}\n${callLines(calls)}` : callLines(calls) };
    }
    if (m.role === 'tool') {
      changed = true;
      const id = String(m.tool_call_id ?? '');
      return { role: 'user', content: `[result of ${names.get(id) || id}] ${text(m.content)}` };
    }
    return m;
  });
  return changed ? out : null;
}

export function dropToolsForModel(body: Json, modelHasTools: boolean): Json | null {
  if (modelHasTools) return null;
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const history = Array.isArray(body.messages) ? toolHistoryAsText(body.messages as Json[]) : null;
  if (!hasTools && history === null && body.tool_choice === undefined) return null;
  const { tools: _t, tool_choice: _c, parallel_tool_calls: _p, ...rest } = body;
  return history ? { ...rest, messages: history } : rest;
}
