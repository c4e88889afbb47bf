/**
 * The dependency scheduler: every sub-task starts the moment its last predecessor has answered, so
 * independent sub-tasks run in parallel and a dependent one receives its predecessors' answers. The first
 * failure rejects the run; sub-tasks depending on the failed one never start (those already running
 * finish and are billed, as every dispatched turn is). Pure apart from the `run` it is given.
 */

export interface Schedulable {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

/** Kahn's order, stable with respect to the input order; null when the dependencies have a cycle. */
export function topologicalOrder<T extends Schedulable>(tasks: readonly T[]): T[] | null {
  const done = new Set<string>();
  const out: T[] = [];
  let remaining = [...tasks];
  while (remaining.length > 0) {
    const ready = remaining.filter((t) => t.dependsOn.every((d) => done.has(d)));
    if (ready.length === 0) return null;
    for (const t of ready) {
      done.add(t.id);
      out.push(t);
    }
    remaining = remaining.filter((t) => !done.has(t.id));
  }
  return out;
}

/** What one sub-task receives: its predecessors' results, in the order they were declared. */
export type Predecessors<R> = readonly { readonly id: string; readonly result: R }[];

/**
 * Runs `tasks` (in topological order, as parsePlan returns them) and resolves with every result by id.
 * A task is started exactly once, after all its dependencies resolved.
 */
export async function runSchedule<T extends Schedulable, R>(tasks: readonly T[], run: (task: T, predecessors: Predecessors<R>) => Promise<R>): Promise<Map<string, R>> {
  const started = new Map<string, Promise<R>>();
  for (const task of tasks) {
    const deps = task.dependsOn.map((id) => {
      const p = started.get(id);
      if (!p) throw new Error(`runSchedule: ${task.id} depends on ${id}, which is not before it`);
      return p.then((result) => ({ id, result }));
    });
    const p = Promise.all(deps).then((predecessors) => run(task, predecessors));
    // A dependent's own rejection is the one reported; this keeps an unawaited branch from being "unhandled".
    p.catch(() => undefined);
    started.set(task.id, p);
  }
  const results = await Promise.all(tasks.map(async (t) => [t.id, await (started.get(t.id) as Promise<R>)] as const));
  return new Map(results);
}
