/**
 * SPEC "Chat and routing errors": a sub-task that needs a modality no endpoint of the project can serve
 * is refused with 400 before anything is dispatched (nothing billed). "Can serve" is read from the
 * endpoints this turn may be routed to; video also needs the deployment's video_input feature. An
 * attachment the client sent is never dropped: a plan that leaves one to no sub-task goes back to the
 * planner, and failing that the turn is served whole by one model.
 */
import { GatewayError } from '../../errors.js';
import type { Modality, SubTask } from './plan.js';

export interface ModalEndpoint {
  readonly model: { readonly capabilities: readonly string[] };
}

const CAPABILITY: Readonly<Record<Exclude<Modality, 'text'>, string>> = { vision: 'vision', audio: 'audio_input', video: 'video_input' };
const CODE = { vision: 'no_vision_capable_endpoint', audio: 'no_audio_input_capable_endpoint', video: 'no_video_input_capable_endpoint' } as const;
const WHAT = { vision: 'images', audio: 'audio input', video: 'video input' } as const;

const servable = (m: Exclude<Modality, 'text'>, endpoints: readonly ModalEndpoint[], videoInputEnabled: boolean): boolean =>
  (m !== 'video' || videoInputEnabled) && endpoints.some((e) => e.model.capabilities.includes(CAPABILITY[m]));

export function checkModalities(subtasks: readonly SubTask[], endpoints: readonly ModalEndpoint[], videoInputEnabled: boolean): void {
  for (const task of subtasks) {
    const m = task.modality;
    if (m === 'text' || servable(m, endpoints, videoInputEnabled)) continue;
    throw new GatewayError(CODE[m], {
      param: 'messages',
      message: `Sub-task ${JSON.stringify(task.id)} needs ${WHAT[m]}, and no endpoint this request may use accepts ${WHAT[m]}.`,
    });
  }
}

/**
 * The client's own attachments, before anything is planned: an image no endpoint this request may use
 * accepts is refused with the same code (SPEC Semantic router behaviour 8), rather than planned around and
 * answered without it.
 */
export function checkAttachments(attached: ReadonlySet<Modality>, endpoints: readonly ModalEndpoint[], videoInputEnabled: boolean): void {
  for (const m of attached) {
    if (m === 'text' || servable(m, endpoints, videoInputEnabled)) continue;
    throw new GatewayError(CODE[m], { param: 'messages', message: `The request attaches ${WHAT[m]}, and no endpoint this request may use accepts ${WHAT[m]}.` });
  }
}

/**
 * What a plan would drop: an attached modality no sub-task has, so no dispatch would send the attachment
 * (step-messages.ts sends a modality's attachments only with its sub-tasks). A problem for the planner to
 * correct, or null.
 */
export function uncoveredAttachment(subtasks: readonly SubTask[], attached: ReadonlySet<Modality>): string | null {
  for (const m of attached) {
    if (m === 'text' || subtasks.some((t) => t.modality === m)) continue;
    return `the conversation attaches ${WHAT[m]}, but no sub-task has modality "${m}", so no model would see them`;
  }
  return null;
}
