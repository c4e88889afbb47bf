/**
 * Runs a plan for n choices (SPEC behaviour 10): each choice dispatches every sub-task once (the
 * dependency scheduler runs independent ones in parallel and hands dependent ones their predecessors'
 * answers), then one synthesis when the plan has 3 or more sub-tasks; smaller plans answer with the
 * terminal step. Usage adds up every dispatch that answered. Progress is reported per finished dispatch.
 */
import { needsSynthesis, sumUsage, type Usage } from '../../core/multimodel/cost.js';
import type { Plan, SubTask } from '../../core/multimodel/plan.js';
import { runSchedule } from '../../core/multimodel/scheduler.js';
import { subTaskMessages, synthesisMessages, type ClientMessage, type StepAnswer } from '../../core/multimodel/step-messages.js';
import type { EndpointRecord } from '../../core/records.js';
import { dispatchStep, type Dispatched, type MultimodelTurn } from './multimodel-dispatch.js';

export interface ChoiceAnswer {
  readonly index: number;
  readonly content: string;
  /**
   * The separate reasoning of the dispatch whose answer this is (the terminal step, or the synthesis):
   * the reasoning behind the content the client reads (docs/decisions.md "Multimodel route").
   */
  readonly reasoning: string | null;
  /** That dispatch's `logprobs` as the model server sent it (null unless the client asked for logprobs). */
  readonly logprobs: unknown;
  /** That dispatch's mapped reasoning effort, reported as x_adjusted_reasoning_effort; null when unchanged. */
  readonly adjustedEffort: string | null;
  readonly finishReason: string;
}

export interface Progress {
  readonly choice: number;
  /** The finished sub-task's id, or null for the synthesis. */
  readonly step: string | null;
  readonly endpoint: string;
}

export interface RunHooks {
  readonly onRouted: (endpoint: EndpointRecord) => void;
  readonly onProgress: (p: Progress) => void;
}

export interface PlanRun {
  readonly client: readonly ClientMessage[];
  /**
   * The client's fields that shape the answer it reads (response_format, logprobs, top_logprobs): sent
   * only on the dispatch whose answer the client receives (the terminal step, or the synthesis).
   */
  readonly answerFields: Readonly<Record<string, unknown>>;
  readonly plan: Plan;
  /** Every dispatch that answered, whatever happened to the others (what `usage` covers). */
  readonly usages: Usage[];
}


export async function runChoice(turn: MultimodelTurn, run: PlanRun, choice: number, hooks: RunHooks): Promise<ChoiceAnswer> {
  const { subtasks } = run.plan;
  const synthesis = needsSynthesis(subtasks.length);
  const terminal = subtasks[subtasks.length - 1] as SubTask;
  const finalFields = run.answerFields;
  const answered = (d: Dispatched, step: string | null): Dispatched => {
    run.usages.push(d.usage);
    hooks.onProgress({ choice, step, endpoint: d.endpoint.slug });
    return d;
  };
  const results = await runSchedule<SubTask, Dispatched>(subtasks, async (task, predecessors) => {
    const answers: StepAnswer[] = predecessors.map((p) => ({ instruction: instructionOf(subtasks, p.id), content: p.result.content }));
    const fields = { messages: subTaskMessages(run.client, task, answers), ...(!synthesis && task === terminal ? finalFields : {}) };
    return answered(await dispatchStep(turn, fields, { role: 'step', stepId: task.id, choice }, hooks.onRouted), task.id);
  });
  if (!synthesis) {
    const last = results.get(terminal.id) as Dispatched;
    return { index: choice, content: last.content, reasoning: last.reasoning, logprobs: last.logprobs, adjustedEffort: last.adjustedEffort, finishReason: last.finishReason };
  }
  const steps: StepAnswer[] = subtasks.map((t) => ({ instruction: t.instruction, content: (results.get(t.id) as Dispatched).content }));
  const merged = answered(await dispatchStep(turn, { messages: synthesisMessages(run.client, steps), ...finalFields }, { role: 'synthesis', stepId: null, choice }, hooks.onRouted), null);
  return { index: choice, content: merged.content, reasoning: merged.reasoning, logprobs: merged.logprobs, adjustedEffort: merged.adjustedEffort, finishReason: merged.finishReason };
}

function instructionOf(subtasks: readonly SubTask[], id: string): string {
  return subtasks.find((t) => t.id === id)?.instruction ?? '';
}

export function usageOf(run: PlanRun): Usage {
  return sumUsage(run.usages);
}
