import { describe, expect, it } from 'vitest';
import type { SubTask } from '../../../../src/core/multimodel/plan.js';
import { subTaskMessages, synthesisMessages, SYNTHESIS_INSTRUCTION } from '../../../../src/core/multimodel/step-messages.js';
import { checkModalities } from '../../../../src/core/multimodel/modality.js';
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
