/**
 * Chat tool allowlist (X-Service-Augment-Tool-Allowlist). The tools a turn declares are the allowlist of
 * its answer: a tool call naming a function the request did not declare (a hallucinated tool) is removed
 * from the answer instead of reaching a client that cannot run it. When every call of a choice is
 * removed, its finish_reason becomes `stop`, and a message left with neither content nor calls gets
 * content "". Applies to buffered answers (app/chat/chat-harness.ts serves such turns buffered). Pure.
 */
type Json = Record<string, unknown>;

/** The choice without undeclared calls; null when every call was declared. */
export function allowDeclaredCalls(choice: Json, declared: ReadonlySet<string>): Json | null {
  const message = (choice.message ?? {}) as Json;
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  const kept = calls.filter((c) => declared.has(String(((c.function ?? {}) as Json).name ?? '')));
  if (kept.length === calls.length) return null;
  const content = kept.length === 0 && (message.content === null || message.content === undefined) ? '' : message.content;
  return {
    ...choice,
    message: { ...message, content, tool_calls: kept.length > 0 ? kept : null },
    finish_reason: kept.length === 0 && choice.finish_reason === 'tool_calls' ? 'stop' : choice.finish_reason,
  };
}
