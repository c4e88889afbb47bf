import { describe, expect, it } from 'vitest';
import { parsePlan } from '../../../src/core/multimodel/plan.js';
import { plannerMessages, transcript } from '../../../src/core/multimodel/planner-prompt.js';
import { asPlannerRequest, planFor } from '../../../src/simulator/planner.js';

const plannerCall = (text: string, retry = false) => ({
  model: 'sim-chat',
  messages: plannerMessages(transcript([{ role: 'user', content: text }]), retry ? { answer: 'x', problem: 'not JSON' } : undefined),
});
const echoed = (body: unknown): string => {
  const content = (body as { messages: { content: string }[] }).messages[0]?.content ?? '';
  return content.replace(/^echo: /, '');
};

describe('the simulator as planner', () => {
  it('answers the planner prompt with a valid plan, one sub-task per sentence by default', () => {
    const verdict = parsePlan(echoed(asPlannerRequest(plannerCall('compute the derivative of sin x. recommend a recipe.'))));
    expect(verdict.ok && verdict.plan.subtasks.map((s) => s.instruction)).toEqual(['compute the derivative of sin x.', 'recommend a recipe.']);
  });

  it('follows a [plan: ...] script: steps, chain, research, modality', () => {
    const plan = JSON.parse(planFor('research lisbon. [plan: steps=3, chain, vision]', false)) as { research: boolean; subtasks: { id: string; modality: string; depends_on: string[] }[] };
    expect(plan.research).toBe(true);
    expect(plan.subtasks.map((s) => [s.id, s.modality, s.depends_on])).toEqual([
      ['s1', 'vision', []],
      ['s2', 'text', ['s1']],
      ['s3', 'text', ['s2']],
    ]);
  });

  it('scripts an invalid plan always, or only before the retry', () => {
    expect(parsePlan(planFor('x [plan: invalid]', true)).ok).toBe(false);
    expect(parsePlan(echoed(asPlannerRequest(plannerCall('x [plan: invalid-once]'))))).toMatchObject({ ok: false });
    expect(parsePlan(echoed(asPlannerRequest(plannerCall('x [plan: invalid-once]', true))))).toMatchObject({ ok: true });
  });

  it('leaves every other request alone', () => {
    const body = { model: 'm', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: 'hi' }] };
    expect(asPlannerRequest(body)).toBe(body);
  });
});
