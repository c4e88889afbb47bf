import { describe, expect, it } from 'vitest';
import { MAX_SUBTASKS, parsePlan, type Plan } from '../../../../src/core/multimodel/plan.js';

const task = (id: string, depends_on: string[] = [], extra: Record<string, unknown> = {}) => ({ id, instruction: `do ${id}`, modality: 'text', depends_on, ...extra });
const plan = (subtasks: unknown[], research = false): string => JSON.stringify({ research, subtasks });

function ok(text: string): Plan {
  const verdict = parsePlan(text);
  if (!verdict.ok) throw new Error(`expected a plan, got: ${verdict.problem}`);
  return verdict.plan;
}

function problem(text: string): string {
  const verdict = parsePlan(text);
  if (verdict.ok) throw new Error('expected a refusal');
  return verdict.problem;
}

describe('plan validation', () => {
  it('accepts a plan and orders its sub-tasks so every one comes after its dependencies', () => {
    const p = ok(plan([task('c', ['a', 'b']), task('a'), task('b', ['a']), task('d')]));
    expect(p.subtasks.map((s) => s.id)).toEqual(['a', 'd', 'b', 'c']);
    expect(p.research).toBe(false);
  });

  it('reads a plan a model fenced in markdown, and fills the optional fields', () => {
    const p = ok('```json\n{"subtasks":[{"id":"x","instruction":"say hi"}]}\n```');
    expect(p.subtasks).toEqual([{ id: 'x', instruction: 'say hi', modality: 'text', dependsOn: [] }]);
  });

  it('makes the terminal step of a plan under three sub-tasks depend on the others, so its answer covers them', () => {
    expect(ok(plan([task('a'), task('b')])).subtasks.map((s) => s.dependsOn)).toEqual([[], ['a']]);
    expect(ok(plan([task('a'), task('b'), task('c')])).subtasks.map((s) => s.dependsOn)).toEqual([[], [], []]);
  });

  it('refuses what is not a plan, naming what is wrong', () => {
    expect(problem('Sure! Here is the plan: step one...')).toBe('the answer is not JSON');
    expect(problem(plan([]))).toMatch(/^subtasks/);
    expect(problem(plan(Array.from({ length: MAX_SUBTASKS + 1 }, (_, i) => task(`t${i}`))))).toMatch(/^subtasks/);
    expect(problem(plan([task('a', [], { modality: 'smell' })]))).toMatch(/^subtasks\.0\.modality/);
    expect(problem(plan([task('a', [], { instruction: '   ' })]))).toMatch(/^subtasks\.0\.instruction/);
    expect(problem(JSON.stringify({ research: 'yes', subtasks: [task('a')] }))).toMatch(/^research/);
  });

  it('refuses duplicate ids, unknown or self dependencies and cycles', () => {
    expect(problem(plan([task('a'), task('a')]))).toContain('used twice');
    expect(problem(plan([task('a', ['ghost'])]))).toContain('unknown subtask "ghost"');
    expect(problem(plan([task('a', ['a'])]))).toContain('depends on itself');
    expect(problem(plan([task('a', ['c']), task('b', ['a']), task('c', ['b'])]))).toBe('the dependencies form a cycle');
  });
});
