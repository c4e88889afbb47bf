/**
 * Corrective retries (X-Service-Augment-Corrective-Retries; SPEC Passthrough 3). A tool call that cannot
 * be run as written (its arguments are not a JSON object, or it names a function the request did not
 * declare) is not handed to the client: the model is asked again, with its attempt and a correction
 * appended, as an extra billed model turn. At most MAX_CORRECTIVE_RETRIES retries; `max_tokens` (or
 * max_completion_tokens) caps the output of all turns together, and a request that reaches the cap before
 * a well-formed answer ends with finish_reason `length`. The loop is app/chat/chat-harness.ts. Pure.
 */
type Json = Record<string, unknown>;

export const MAX_CORRECTIVE_RETRIES = 2;

export interface MalformedCall {
  readonly name: string;
  readonly arguments: string;
  readonly reason: string;
}

function argumentProblem(args: unknown): string | null {
  if (typeof args !== 'string') return 'the arguments are not a JSON string';
  try {
    const parsed = JSON.parse(args) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? null : 'the arguments are not a JSON object';
  } catch {
    return 'the arguments are not valid JSON';
  }
}

/** The first call of the choice that cannot run as written, or null. */
export function findMalformedCall(choice: Json, declared: ReadonlySet<string>): MalformedCall | null {
  const message = (choice.message ?? {}) as Json;
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  for (const call of calls) {
    const fn = (call.function ?? {}) as Json;
    const name = String(fn.name ?? '');
    const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? null);
    if (!declared.has(name)) return { name, arguments: args, reason: `${name} is not one of the declared tools (${[...declared].join(', ')})` };
    const problem = argumentProblem(fn.arguments);
    if (problem) return { name, arguments: args, reason: problem };
  }
  return null;
}

/**
 * What the retry appends: the attempt as assistant text (a malformed call cannot stand as a tool_calls
 * entry the model server would accept back) and a user message saying what to fix.
 */
export function correctionMessages(choice: Json, bad: MalformedCall): Json[] {
  const message = (choice.message ?? {}) as Json;
  const said = typeof message.content === 'string' && message.content.length > 0 ? `${message.content}\n` : '';
  return [
    { role: 'assistant', content: `${said}[called ${bad.name}(${bad.arguments})]` },
    {
      role: 'user',
      content: `Your tool call to ${bad.name} could not be run: ${bad.reason}. Call the tool again with arguments that are a JSON object matching its parameters schema.`,
    },
  ];
}

/** The answer when the output cap ran out first: no call that cannot run, finish_reason length. */
export function cappedChoice(choice: Json): Json {
  const message = (choice.message ?? {}) as Json;
  return { ...choice, message: { ...message, content: typeof message.content === 'string' ? message.content : '', tool_calls: null }, finish_reason: 'length' };
}
