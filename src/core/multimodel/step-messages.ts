/**
 * What each dispatch of a plan sends (SPEC behaviour 10). A sub-task sends the client's system and
 * developer messages, then each predecessor as an exchange (its instruction as a user turn, its answer as
 * the assistant's), then its own instruction with the attachments its modality needs. The synthesis sends
 * every step the same way and asks for one answer to the client's request. This wording reaches models
 * only: the client receives a model's answer untouched, never any of it (no merge scaffolding).
 */
import type { Modality, SubTask } from './plan.js';

export interface ClientMessage {
  readonly role: string;
  readonly content?: unknown;
}

export interface StepAnswer {
  readonly instruction: string;
  readonly content: string;
}

type Part = Record<string, unknown> & { readonly type?: unknown };
/** A message a dispatch sends. */
export type StepMessage = { readonly role: string; readonly content: unknown };
type OutMessage = StepMessage;

const PART_OF: Readonly<Record<Exclude<Modality, 'text'>, string>> = { vision: 'image_url', audio: 'input_audio', video: 'video_url' };

export const SYNTHESIS_INSTRUCTION = 'Using the answers above, write one complete answer to this request. Answer the request directly; do not mention the steps.';

function instructions(messages: readonly ClientMessage[]): OutMessage[] {
  return messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => ({ role: m.role, content: m.content }));
}

function exchanges(answers: readonly StepAnswer[]): OutMessage[] {
  return answers.flatMap((a) => [
    { role: 'user', content: a.instruction },
    { role: 'assistant', content: a.content },
  ]);
}

/** The attachment modalities of the client's user messages. */
export function attachedModalities(messages: readonly ClientMessage[]): Set<Modality> {
  const found = new Set<Modality>();
  for (const m of messages) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const part of m.content as Part[]) {
      for (const [modality, type] of Object.entries(PART_OF) as [Exclude<Modality, 'text'>, string][]) if (part?.type === type) found.add(modality);
    }
  }
  return found;
}

/** The client's attachments of one kind, from every user message, in order. */
export function attachments(messages: readonly ClientMessage[], modality: Modality): Part[] {
  if (modality === 'text') return [];
  const type = PART_OF[modality];
  return messages.flatMap((m) => (m.role === 'user' && Array.isArray(m.content) ? (m.content as Part[]).filter((p) => p?.type === type) : []));
}

export function subTaskMessages(client: readonly ClientMessage[], task: SubTask, predecessors: readonly StepAnswer[]): OutMessage[] {
  const media = attachments(client, task.modality);
  const ask: OutMessage = { role: 'user', content: media.length === 0 ? task.instruction : [{ type: 'text', text: task.instruction }, ...media] };
  return [...instructions(client), ...exchanges(predecessors), ask];
}

/** The client's latest user text: what the synthesis must answer. */
export function latestRequest(client: readonly ClientMessage[]): string {
  for (let i = client.length - 1; i >= 0; i -= 1) {
    const m = client[i];
    if (m?.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content)) {
      return (m.content as Part[])
        .filter((p) => p?.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text as string)
        .join('\n');
    }
  }
  return '';
}

export function synthesisMessages(client: readonly ClientMessage[], steps: readonly StepAnswer[]): OutMessage[] {
  return [...instructions(client), ...exchanges(steps), { role: 'user', content: `${SYNTHESIS_INSTRUCTION}\n\n${latestRequest(client)}` }];
}
