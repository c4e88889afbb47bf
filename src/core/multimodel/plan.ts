/**
 * The planner's answer: a JSON plan of sub-tasks (SPEC behaviour 10). Parsed with zod, then checked for
 * what a schema cannot say (unique ids, known and acyclic dependencies). A plan that fails any of this is
 * reported as a problem string, which the planner call sends back once as a correction before the turn
 * degrades to single-endpoint dispatch (app/multimodel/multimodel-planner.ts).
 */
import { z } from 'zod';
import { topologicalOrder } from './scheduler.js';

/** What a sub-task needs from the endpoint that serves it, besides text. */
export const MODALITIES = ['text', 'vision', 'audio', 'video'] as const;
export type Modality = (typeof MODALITIES)[number];

/** More sub-tasks than this is a planner gone astray, not a plan: n x S dispatches are billed. */
export const MAX_SUBTASKS = 8;
export const MAX_INSTRUCTION_CHARS = 4000;

export interface SubTask {
  readonly id: string;
  readonly instruction: string;
  readonly modality: Modality;
  readonly dependsOn: readonly string[];
}

export interface Plan {
  /** The planner judged that the turn asks for research (SPEC: n > 1 then gives 400 unsupported_value). */
  readonly research: boolean;
  /** In a dependency-respecting order; the last one is the terminal step. */
  readonly subtasks: readonly SubTask[];
}

const wirePlan = z.object({
  research: z.boolean().default(false),
  subtasks: z
    .array(
      z.object({
        id: z.string().min(1).max(64),
        instruction: z.string().trim().min(1).max(MAX_INSTRUCTION_CHARS),
        modality: z.enum(MODALITIES).default('text'),
        depends_on: z.array(z.string()).max(MAX_SUBTASKS).default([]),
      }),
    )
    .min(1)
    .max(MAX_SUBTASKS),
});

/** The JSON schema sent with the planner call where the endpoint supports structured output. */
export const PLAN_JSON_SCHEMA = {
  type: 'object',
  required: ['research', 'subtasks'],
  additionalProperties: false,
  properties: {
    research: { type: 'boolean' },
    subtasks: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_SUBTASKS,
      items: {
        type: 'object',
        required: ['id', 'instruction', 'modality', 'depends_on'],
        additionalProperties: false,
        properties: {
          id: { type: 'string' },
          instruction: { type: 'string' },
          modality: { type: 'string', enum: [...MODALITIES] },
          depends_on: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;

export type PlanVerdict = { readonly ok: true; readonly plan: Plan } | { readonly ok: false; readonly problem: string };

/** Models often fence JSON in markdown even when asked not to; the fence is not part of the plan. */
function unfenced(text: string): string {
  const m = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(text);
  return m?.[1] ?? text;
}

export function parsePlan(text: string): PlanVerdict {
  let json: unknown;
  try {
    json = JSON.parse(unfenced(text));
  } catch {
    return { ok: false, problem: 'the answer is not JSON' };
  }
  const parsed = wirePlan.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, problem: `${issue?.path.join('.') || 'plan'}: ${issue?.message ?? 'invalid'}` };
  }
  const raw = parsed.data.subtasks.map((s) => ({ id: s.id, instruction: s.instruction, modality: s.modality, dependsOn: [...new Set(s.depends_on)] }));
  const ids = new Set<string>();
  for (const s of raw) {
    if (ids.has(s.id)) return { ok: false, problem: `subtask id ${JSON.stringify(s.id)} is used twice` };
    ids.add(s.id);
  }
  for (const s of raw) {
    for (const d of s.dependsOn) {
      if (d === s.id) return { ok: false, problem: `subtask ${JSON.stringify(s.id)} depends on itself` };
      if (!ids.has(d)) return { ok: false, problem: `subtask ${JSON.stringify(s.id)} depends on unknown subtask ${JSON.stringify(d)}` };
    }
  }
  const ordered = topologicalOrder(raw);
  if (ordered === null) return { ok: false, problem: 'the dependencies form a cycle' };
  return { ok: true, plan: { research: parsed.data.research, subtasks: withTerminal(ordered) } };
}

/**
 * A plan of fewer than three sub-tasks returns its terminal step's answer (SPEC behaviour 10), so that step
 * must see every other answer: it is made to depend on all of them (docs/decisions.md "Multimodel route").
 * Larger plans are merged by the synthesis dispatch and keep their dependencies as planned.
 */
function withTerminal(ordered: readonly SubTask[]): SubTask[] {
  if (ordered.length >= 3) return [...ordered];
  const last = ordered[ordered.length - 1] as SubTask;
  const others = ordered.slice(0, -1).map((s) => s.id);
  return [...ordered.slice(0, -1), { ...last, dependsOn: [...new Set([...last.dependsOn, ...others])] }];
}
