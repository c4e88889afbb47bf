/**
 * SPEC "Chat and routing errors": a sub-task that needs a modality no endpoint of the project can serve
 * is refused with 400 before anything is dispatched (nothing billed). "Can serve" is read from the
 * endpoints this turn may be routed to; video also needs the deployment's video_input feature.
 */
import { GatewayError } from '../../errors.js';
import type { Modality, SubTask } from './plan.js';

export interface ModalEndpoint {
  readonly model: { readonly capabilities: readonly string[] };
}

const CAPABILITY: Readonly<Record<Exclude<Modality, 'text'>, string>> = { vision: 'vision', audio: 'audio_input', video: 'video_input' };
const CODE = { vision: 'no_vision_capable_endpoint', audio: 'no_audio_input_capable_endpoint', video: 'no_video_input_capable_endpoint' } as const;
const WHAT = { vision: 'images', audio: 'audio input', video: 'video input' } as const;

export function checkModalities(subtasks: readonly SubTask[], endpoints: readonly ModalEndpoint[], videoInputEnabled: boolean): void {
  for (const task of subtasks) {
    const m = task.modality;
    if (m === 'text') continue;
    const capable = (m !== 'video' || videoInputEnabled) && endpoints.some((e) => e.model.capabilities.includes(CAPABILITY[m]));
    if (!capable) {
      throw new GatewayError(CODE[m], {
        param: 'messages',
        message: `Sub-task ${JSON.stringify(task.id)} needs ${WHAT[m]}, and no endpoint this request may use accepts ${WHAT[m]}.`,
      });
    }
  }
}
