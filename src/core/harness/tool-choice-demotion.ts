/**
 * Tool-choice demotion (X-Service-Augment-Tool-Choice-Demotion). A forcing `tool_choice` (`required` or a
 * named function) is demoted to `auto` when forcing can only loop or fail:
 * - the turn's last message is a tool result: the forced call was made, and forcing another one on every
 *   turn never lets the model answer (the classic agent loop);
 * - the named function is not among the tools any more (tool top-k or the allowlist dropped it).
 * With no tools left at all, `tool_choice` (and `parallel_tool_calls`) are removed instead. Pure.
 */
type Json = Record<string, unknown>;

export function toolNames(body: Json): string[] {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  return tools.map((t) => String((t.function as Json | undefined)?.name ?? ''));
}

export function demoteToolChoice(body: Json): Json | null {
  const choice = body.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none') return null;
  const names = toolNames(body);
  if (names.length === 0) {
    const { tool_choice: _c, parallel_tool_calls: _p, ...rest } = body;
    return rest;
  }
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const afterToolResult = messages[messages.length - 1]?.role === 'tool';
  const named = typeof choice === 'object' ? String(((choice as Json).function as Json | undefined)?.name ?? '') : null;
  const missing = named !== null && !names.includes(named);
  return afterToolResult || missing ? { ...body, tool_choice: 'auto' } : null;
}
