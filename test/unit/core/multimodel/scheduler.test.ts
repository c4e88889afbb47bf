import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runSchedule, topologicalOrder } from '../../../../src/core/multimodel/scheduler.js';

const t = (id: string, ...dependsOn: string[]) => ({ id, dependsOn });

describe('topological order', () => {
  it('keeps the input order among ready tasks and reports a cycle as null', () => {
    expect(topologicalOrder([t('b', 'a'), t('a'), t('c')])?.map((x) => x.id)).toEqual(['a', 'c', 'b']);
    expect(topologicalOrder([t('a', 'b'), t('b', 'a')])).toBeNull();
  });
});

describe('the dependency scheduler (fake clock)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A scripted model: each task answers after its own delay on the fake clock; starts are logged. */
  function scripted(delays: Record<string, number>) {
    const started: { id: string; at: number; saw: string[] }[] = [];
    const run = (task: { id: string }, predecessors: readonly { id: string; result: string }[]) =>
      new Promise<string>((resolve) => {
        started.push({ id: task.id, at: Date.now(), saw: predecessors.map((p) => p.result) });
        setTimeout(() => resolve(`answer of ${task.id}`), delays[task.id] ?? 0);
      });
    return { started, run };
  }

  it('starts independent sub-tasks together and a dependent one when its last predecessor answers, with their answers', async () => {
    const start = Date.now();
    const model = scripted({ a: 100, b: 300, c: 50, d: 10 });
    const done = runSchedule([t('a'), t('b'), t('c', 'a'), t('d', 'b', 'c')], model.run);
    await vi.runAllTimersAsync();
    const results = await done;
    const at = Object.fromEntries(model.started.map((s) => [s.id, s.at - start]));
    expect(at).toEqual({ a: 0, b: 0, c: 100, d: 300 });
    expect(model.started.find((s) => s.id === 'd')?.saw).toEqual(['answer of b', 'answer of c']);
    expect(results.get('d')).toBe('answer of d');
  });

  it('rejects with the first failure and never starts what depends on the failed sub-task', async () => {
    const started: string[] = [];
    const done = runSchedule([t('a'), t('b'), t('c', 'a')], async (task) => {
      started.push(task.id);
      if (task.id === 'a') throw new Error('a failed');
      return task.id;
    });
    await expect(done).rejects.toThrow('a failed');
    expect(started).toEqual(['a', 'b']);
  });
});
