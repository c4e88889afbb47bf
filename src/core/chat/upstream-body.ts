/**
 * The body the model server receives: the client's bytes with only `model` replaced (SPEC Passthrough
 * rule 1), plus the edits SPEC itself prescribes and reports: a clamped max when the client opted into
 * clamping, and a reasoning effort that SPEC's mapping changed (reported as x_adjusted_reasoning_effort).
 */
import { spliceTopLevel } from '../json-splice.js';

type Json = Record<string, unknown>;

export interface BodyEdits {
  readonly upstreamModel: string;
  readonly clamp: { readonly field: 'max_tokens' | 'max_completion_tokens'; readonly value: number } | null;
  /** The mapped effort, only when it differs from what the client sent. */
  readonly adjustedEffort: string | null;
}

export function buildUpstreamBody(raw: Buffer, parsed: Json, edits: BodyEdits): Buffer {
  const replacements = new Map<string, string>([['model', JSON.stringify(edits.upstreamModel)]]);
  if (edits.clamp) replacements.set(edits.clamp.field, String(edits.clamp.value));
  if (edits.adjustedEffort !== null) {
    if (typeof parsed.reasoning_effort === 'string') replacements.set('reasoning_effort', JSON.stringify(edits.adjustedEffort));
    const reasoning = parsed.reasoning;
    if (reasoning && typeof reasoning === 'object' && typeof (reasoning as Json).effort === 'string') {
      replacements.set('reasoning', JSON.stringify({ ...(reasoning as Json), effort: edits.adjustedEffort }));
    }
  }
  const spliced = spliceTopLevel(raw, replacements);
  if (spliced) return spliced;
  // Unreachable for bodies that parsed as objects with these keys; kept as a safe fallback.
  const copy: Json = { ...parsed };
  for (const [key, value] of replacements) copy[key] = JSON.parse(value) as unknown;
  return Buffer.from(JSON.stringify(copy));
}
