/**
 * `x_research_run` on the multimodel route (SPEC scopes table: the `research` scope grants the research
 * surface, `x_research_run` among it; behaviour 10: a turn with n above 1 that asks for research is 400
 * `unsupported_value`, param `n`). A turn asks for research when the client says so with this field, or
 * when the planner judges that it does (plan.research); the field is checked before anything is planned
 * or dispatched, and never reaches a model server.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { GatewayError } from '../../errors.js';

type Json = Record<string, unknown>;

export const RESEARCH_FIELD = 'x_research_run';

/** Whether the client asked for research; throws for a field that is not a boolean, a key without the scope, or n above 1. */
export function researchOptIn(parsed: Json, auth: AuthenticatedKey, n: number): boolean {
  const flag = parsed[RESEARCH_FIELD];
  if (flag === undefined || flag === null || flag === false) return false;
  if (flag !== true) throw new GatewayError('invalid_request', { param: RESEARCH_FIELD, message: `${RESEARCH_FIELD} must be a boolean.` });
  if (!auth.key.scopes.includes('research')) {
    throw new GatewayError('scope_insufficient', {
      param: RESEARCH_FIELD,
      message: `${RESEARCH_FIELD} needs the research scope; the API key has ${auth.key.scopes.join(', ')}.`,
    });
  }
  if (n > 1) throw new GatewayError('unsupported_value', { param: 'n', message: `n above 1 is not supported for a turn that asks for research (${RESEARCH_FIELD}: true) on the multimodel route; send n: 1.` });
  return true;
}

/** The body without the field (raw bytes re-serialized only when it was there), as a model server gets it. */
export function withoutResearchField<B extends { readonly raw: Buffer; readonly parsed: Json }>(body: B): B {
  if (!(RESEARCH_FIELD in body.parsed)) return body;
  const { [RESEARCH_FIELD]: _dropped, ...parsed } = body.parsed;
  return { ...body, parsed, raw: Buffer.from(JSON.stringify(parsed)) };
}
