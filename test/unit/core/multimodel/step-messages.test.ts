import { describe, expect, it } from 'vitest';
import type { SubTask } from '../../../../src/core/multimodel/plan.js';
import { attachedModalities, subTaskMessages, synthesisMessages, SYNTHESIS_INSTRUCTION } from '../../../../src/core/multimodel/step-messages.js';
import { checkAttachments, checkModalities, uncoveredAttachment } from '../../../../src/core/multimodel/modality.js';
import { GatewayError } from '../../../../src/errors.js';

const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } };
const client = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: [{ type: 'text', text: 'What is in this photo, and a recipe with it?' }, image] },
];
const step = (id: string, modality: SubTask['modality'] = 'text'): SubTask => ({ id, instruction: `instruction ${id}`, modality, dependsOn: [] });

describe('dispatch messages', () => {
  it('gives a sub-task the client instructions, its predecessors as exchanges and only the attachments its modality needs', () => {
    expect(subTaskMessages(client, step('a', 'vision'), [])).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'instruction a' }, image] },
    ]);
    expect(subTaskMessages(client, step('b'), [{ instruction: 'instruction a', content: 'a tomato' }])).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'instruction a' },
      { role: 'assistant', content: 'a tomato' },
      { role: 'user', content: 'instruction b' },
    ]);
  });

  it('asks the synthesis for one answer to the client request', () => {
    const messages = synthesisMessages(client, [{ instruction: 'instruction a', content: 'a tomato' }]);
    expect(messages.at(-1)).toEqual({ role: 'user', content: `${SYNTHESIS_INSTRUCTION}\n\nWhat is in this photo, and a recipe with it?` });
  });
});

describe('modality check', () => {
  const endpoint = (...capabilities: string[]) => ({ model: { capabilities } });
  const refusal = (tasks: SubTask[], endpoints: { model: { capabilities: string[] } }[], video = true): string | null => {
    try {
      checkModalities(tasks, endpoints, video);
      return null;
    } catch (err) {
      return (err as GatewayError).code;
    }
  };

  it('refuses a sub-task whose modality no endpoint serves with the modality code', () => {
    expect(refusal([step('a'), step('b', 'vision')], [endpoint('tools')])).toBe('no_vision_capable_endpoint');
    expect(refusal([step('a', 'audio')], [endpoint('vision')])).toBe('no_audio_input_capable_endpoint');
    expect(refusal([step('a', 'video')], [endpoint('video_input')], false)).toBe('no_video_input_capable_endpoint');
    expect(refusal([step('a', 'vision'), step('b', 'video')], [endpoint('vision'), endpoint('video_input')])).toBeNull();
  });
});

describe('attachments and the plan', () => {
  const audio = { type: 'input_audio', input_audio: { data: 'AA==', format: 'wav' } };

  it('finds the modalities attached to user messages only', () => {
    expect([...attachedModalities(client)]).toEqual(['vision']);
    expect([...attachedModalities([{ role: 'assistant', content: [image] }, { role: 'user', content: 'text only' }])]).toEqual([]);
    expect(new Set(attachedModalities([{ role: 'user', content: [audio] }, { role: 'user', content: [image] }]))).toEqual(new Set(['audio', 'vision']));
  });

  it('names an attached modality no sub-task carries, so the planner is asked again', () => {
    expect(uncoveredAttachment([step('a'), step('b')], new Set(['vision']))).toBe('the conversation attaches images, but no sub-task has modality "vision", so no model would see them');
    expect(uncoveredAttachment([step('a'), step('b', 'vision')], new Set(['vision']))).toBeNull();
    expect(uncoveredAttachment([step('a')], new Set())).toBeNull();
  });

  it('refuses an attachment no endpoint accepts, with the modality code', () => {
    const code = (endpoints: { model: { capabilities: string[] } }[]): string | null => {
      try {
        checkAttachments(new Set(['vision']), endpoints, true);
        return null;
      } catch (err) {
        return (err as GatewayError).code;
      }
    };
    expect(code([{ model: { capabilities: ['tools'] } }])).toBe('no_vision_capable_endpoint');
    expect(code([{ model: { capabilities: ['vision'] } }])).toBeNull();
  });
});
