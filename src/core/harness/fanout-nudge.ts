/**
 * Fan-out nudge (X-Service-Augment-Fanout-Nudge; SPEC Passthrough 4). When a turn advertises two or more
 * server-owned tools, one system message asks the model to issue independent calls together, so the
 * gateway runs them in one round instead of one model turn per call. Server-owned tools are the ones the
 * gateway runs itself: the execution tools the `x_exec` bridge offers (docs/exec.md). With only the
 * client's own function tools the nudge is a no-op, and the header is never refused. Pure.
 */
type Json = Record<string, unknown>;

export const FANOUT_NUDGE =
  'Several tools are available that the server runs for you. When you need more than one of them and the calls do not depend ' +
  "on each other's results, request all of them together in a single response (parallel tool calls) instead of one per turn.";

/** The nudge goes after the leading system/developer messages: instructions first, then the conversation. */
export function fanoutNudge(body: Json, serverOwnedTools: number): Json | null {
  // An explicit parallel_tool_calls: false is the client's word against fan-out: no nudge.
  if (serverOwnedTools < 2 || body.parallel_tool_calls === false || !Array.isArray(body.messages)) return null;
  const messages = body.messages as Json[];
  let at = 0;
  while (at < messages.length && (messages[at]?.role === 'system' || messages[at]?.role === 'developer')) at++;
  const nudged = [...messages.slice(0, at), { role: 'system', content: FANOUT_NUDGE }, ...messages.slice(at)];
  return { ...body, messages: nudged };
}
