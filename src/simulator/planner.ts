/**
 * The simulator as the multimodel route's planner (issue 16). A chat request whose first message is the
 * planner prompt (core/multimodel/planner-prompt.ts, recognised by its first line) is answered with a JSON
 * plan, deterministically, by rewriting it into an `echo:` turn: streamed and buffered answers, usage and
 * every knob then work as for any other turn. Tests script the plan with a directive in the client's
 * text, `[plan: ...]`, a comma-separated list of:
 *   steps=K      K sub-tasks (1-8); default: one per sentence of the request, at most 4
 *   chain        each sub-task depends on the one before (default: independent)
 *   research     the plan says the turn asks for research (also: the word "research" in the request)
 *   vision | audio | video   the first sub-task needs that modality
 *   invalid      the answer is not a plan, on every attempt
 *   invalid-once the answer is not a plan unless the request is the gateway's retry
 */
import { PLANNER_MARKER } from '../core/multimodel/planner-prompt.js';
import { isRecord } from './json.js';

const DIRECTIVE = /\[plan:\s*([^\]]*)\]/i;
const NOT_A_PLAN = 'Here is my plan: first I will think about it.';
const MAX_DEFAULT_STEPS = 4;

/** The request's body rewritten into an echo of the plan, or the body unchanged when it is not a planner call. */
export function asPlannerRequest(body: unknown): unknown {
  if (!isRecord(body) || !Array.isArray(body['messages'])) return body;
  const messages = body['messages'] as unknown[];
  const first = messages[0];
  if (!isRecord(first) || first['role'] !== 'system' || typeof first['content'] !== 'string' || !first['content'].startsWith(PLANNER_MARKER)) return body;
  const conversation = messages[1];
  const text = isRecord(conversation) && typeof conversation['content'] === 'string' ? conversation['content'] : '';
  // The gateway's retry repeats the exchange with the rejected answer (an assistant turn) and a correction.
  const retry = messages.length > 2;
  return { ...body, messages: [{ role: 'user', content: `echo: ${planFor(latestUserText(text), retry)}` }] };
}

function latestUserText(transcript: string): string {
  const at = transcript.lastIndexOf('user: ');
  return at < 0 ? transcript : transcript.slice(at + 'user: '.length);
}

export function planFor(request: string, retry: boolean): string {
  const flags = (DIRECTIVE.exec(request)?.[1] ?? '').split(',').map((f) => f.trim().toLowerCase()).filter((f) => f !== '');
  if (flags.includes('invalid') || (flags.includes('invalid-once') && !retry)) return NOT_A_PLAN;
  const text = request.replace(DIRECTIVE, '').trim();
  const sentences = text.split(/(?<=[.?!])\s+/).map((s) => s.trim()).filter((s) => s !== '');
  if (sentences.length === 0) sentences.push(text === '' ? 'Answer the request.' : text);
  const stepsFlag = flags.find((f) => f.startsWith('steps='));
  const count = stepsFlag ? Math.min(8, Math.max(1, Number.parseInt(stepsFlag.slice('steps='.length), 10) || 1)) : Math.min(sentences.length, MAX_DEFAULT_STEPS);
  const modality = flags.find((f) => f === 'vision' || f === 'audio' || f === 'video') ?? 'text';
  const chain = flags.includes('chain');
  const subtasks = Array.from({ length: count }, (_, i) => ({
    id: `s${i + 1}`,
    instruction: i < sentences.length ? (sentences[i] as string) : `${sentences[i % sentences.length] as string} (part ${i + 1})`,
    modality: i === 0 ? modality : 'text',
    depends_on: chain && i > 0 ? [`s${i}`] : [],
  }));
  return JSON.stringify({ research: flags.includes('research') || /\bresearch\b/i.test(text), subtasks });
}
