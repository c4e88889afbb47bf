import type { PlannedTurn } from './chat-completion.js';
import { isRecord } from './json.js';
import type { Knobs } from './knobs.js';

// Ways real models get tool calls wrong, on demand, so the gateway's harness (fabricated tool calls,
// corrective retries, the tool allowlist) can be exercised deterministically:
// - tool_call_as_text: the call is written into content as `<tool_call>{"name", "arguments"}</tool_call>`
//   (the Hermes/Qwen template) instead of the tool-call channel; finish_reason stop;
// - malformed_tool_calls N: while the conversation holds fewer than N assistant messages, the call's
//   arguments are cut short (invalid JSON); a corrected retry, which appends one, eventually gets a good call;
// - undeclared_tool NAME: the call names NAME, whatever the request declared.

function assistantMessages(body: unknown): number {
  const messages = isRecord(body) ? body['messages'] : undefined;
  return Array.isArray(messages) ? messages.filter((m) => isRecord(m) && m['role'] === 'assistant').length : 0;
}

export function misbehave(turn: PlannedTurn, knobs: Knobs, body: unknown): PlannedTurn {
  if (!knobs.toolCallAsText && knobs.malformedToolCalls === 0 && knobs.undeclaredTool === null) return turn;
  const malformed = assistantMessages(body) < knobs.malformedToolCalls;
  for (const choice of turn.choices) {
    if (choice.toolCalls.length === 0) continue;
    choice.toolCalls = choice.toolCalls.map((c) => ({
      ...c,
      name: knobs.undeclaredTool ?? c.name,
      arguments: malformed ? c.arguments.slice(0, -1) : c.arguments,
    }));
    if (!knobs.toolCallAsText) continue;
    const text = choice.toolCalls.map((c) => `<tool_call>{"name": ${JSON.stringify(c.name)}, "arguments": ${c.arguments}}</tool_call>`).join('\n');
    choice.content = [...choice.content, text];
    choice.contentText = choice.content.join('');
    choice.toolCalls = [];
    choice.finishReason = 'stop';
  }
  return turn;
}
