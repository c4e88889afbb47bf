/**
 * THE planner prompt, in one place. The planner is a model call to the project's planner endpoint
 * (setting semantic_router_planner_endpoint_id, else the default of app/multimodel/multimodel-planner.ts) that
 * reads the client's conversation as a transcript and answers with a JSON plan (plan.ts). The bundled
 * simulator recognises the prompt by its first line (PLANNER_MARKER) and plans deterministically.
 */
import { MAX_SUBTASKS, PLAN_JSON_SCHEMA } from './plan.js';

export const PLANNER_MARKER = 'You are the Switchboard multimodel planner.';
export const PLAN_SCHEMA_NAME = 'switchboard_plan';

export const PLANNER_PROMPT = `${PLANNER_MARKER}
Split the user's latest request into at most ${MAX_SUBTASKS} sub-tasks, each small enough for one specialised model.
Answer with one JSON object and nothing else:
{"research": boolean, "subtasks": [{"id": string, "instruction": string, "modality": "text" | "vision" | "audio" | "video", "depends_on": [id, ...]}]}
Rules:
- "instruction" is self-contained: the model that runs it does not see the conversation, only the instruction, the attachments its modality names, and the answers of the sub-tasks it depends on.
- "modality" is "vision" when the sub-task must look at an attached image, "audio" for attached audio, "video" for attached video, else "text".
- "depends_on" lists the ids of sub-tasks whose answers this one needs; sub-tasks without dependencies run in parallel. No cycles.
- "research" is true when the request asks for research (gathering and weighing information from several angles).
- A request that needs no splitting is one sub-task.`;

export interface PlannerMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

interface TranscriptMessage {
  readonly role: string;
  readonly content?: unknown;
}

const ATTACHMENT: Readonly<Record<string, string>> = { image_url: '[image attached]', input_audio: '[audio attached]', video_url: '[video attached]' };

/** The client's conversation as the planner reads it: one line per message, attachments named, not sent. */
export function transcript(messages: readonly TranscriptMessage[]): string {
  return messages
    .map((m) => {
      const c = m.content;
      const text =
        typeof c === 'string'
          ? c
          : Array.isArray(c)
            ? (c as { type?: unknown; text?: unknown }[])
                .map((p) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : (ATTACHMENT[String(p?.type)] ?? '')))
                .filter((s) => s !== '')
                .join(' ')
            : '';
      return `${m.role}: ${text}`;
    })
    .join('\n');
}

/**
 * The planner's messages. A retry repeats the exchange with the rejected answer and what was wrong with
 * it, so the model can correct itself (one retry, SPEC behaviour 10 as issue 16 words it).
 */
export function plannerMessages(conversation: string, rejected?: { readonly answer: string; readonly problem: string }): PlannerMessage[] {
  const base: PlannerMessage[] = [
    { role: 'system', content: PLANNER_PROMPT },
    { role: 'user', content: conversation },
  ];
  if (!rejected) return base;
  return [
    ...base,
    { role: 'assistant', content: rejected.answer },
    { role: 'user', content: `That is not a valid plan (${rejected.problem}). Answer again with the JSON object only.` },
  ];
}

/** The planner call's body; response_format only where the endpoint is declared to support it. */
export function plannerBody(upstreamModel: string, messages: readonly PlannerMessage[], structuredOutput: boolean): Record<string, unknown> {
  return {
    model: upstreamModel,
    messages,
    temperature: 0,
    ...(structuredOutput ? { response_format: { type: 'json_schema', json_schema: { name: PLAN_SCHEMA_NAME, schema: PLAN_JSON_SCHEMA } } } : {}),
  };
}
