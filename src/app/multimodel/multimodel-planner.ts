/**
 * The planner call of the multimodel route: one model turn to the project's planner endpoint that must
 * answer with a JSON plan (core/multimodel/plan.ts). An answer that does not parse or validate is sent back
 * once with what was wrong; a second bad answer, or a planner that fails or cannot be reached, returns
 * null and the turn degrades to single-endpoint dispatch (SPEC behaviour 10 fails open like the router).
 * The planner call is routing work: no usage row, no decision row (docs/decisions.md "Multimodel route").
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { uncoveredAttachment } from '../../core/multimodel/modality.js';
import { parsePlan, type Modality, type Plan } from '../../core/multimodel/plan.js';
import { plannerBody, plannerMessages } from '../../core/multimodel/planner-prompt.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import type { RouterChatServices } from '../chat/router-chat-services.js';
import type { TurnCaller } from '../turn-io.js';

const bySlug = (a: EndpointRecord, b: EndpointRecord): number => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);

/**
 * The planner endpoint: `semantic_router_planner_endpoint_id` when it names an active chat endpoint of the
 * project that this turn may reach (an endpoint-bound key's own endpoint; one serving the turn's
 * workspace); else (the documented default) the project's fallback endpoint when this turn may use it, else
 * the first endpoint by slug that declares structured_output among those this turn may be routed to, else
 * the first of those by slug.
 */
export function plannerEndpoint(services: RouterChatServices, auth: AuthenticatedKey, workspaceId: string | null): EndpointRecord {
  const settings = services.router.settingsOf(auth.project.id);
  const configured = settings.plannerEndpointId ?? null;
  if (configured !== null) {
    const e = services.catalog.endpoints(auth.project.id).find((x) => x.id === configured);
    const reachable = e !== undefined && (auth.key.endpointId === null || e.id === auth.key.endpointId) && (workspaceId === null || e.workspaceIds.includes(workspaceId));
    if (e && reachable && e.kind === 'chat' && e.status === 'active') return e;
  }
  const routable = services.router.routableEndpoints(auth.project.id, workspaceId, auth.key.endpointId);
  const fallback = routable.find((e) => e.id === settings.fallbackEndpointId);
  if (fallback) return fallback;
  const sorted = [...routable].sort(bySlug);
  const chosen = sorted.find((e) => (e.model.capabilities as readonly string[]).includes('structured_output')) ?? sorted[0];
  if (!chosen) throw new GatewayError('no_routable_endpoints', { message: 'This workspace has no routable endpoint: no active chat endpoint serves it.' });
  return chosen;
}

export interface PlannerRequest {
  readonly services: RouterChatServices;
  readonly req: TurnCaller;
  readonly endpoint: EndpointRecord;
  /** The client's conversation as a transcript (planner-prompt.ts). */
  readonly conversation: string;
  /** The modalities the client attached: a plan must give each to a sub-task (core/multimodel/modality.ts). */
  readonly attached: ReadonlySet<Modality>;
}

/** A valid plan, or null: degrade to single-endpoint dispatch. */
export async function makePlan(p: PlannerRequest): Promise<Plan | null> {
  const structured = (p.endpoint.model.capabilities as readonly string[]).includes('structured_output');
  let rejected: { answer: string; problem: string } | undefined;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const answer = await askPlanner(p, plannerBody(p.endpoint.upstream.model, plannerMessages(p.conversation, rejected), structured));
    if (answer === null) return null;
    const verdict = parsePlan(answer);
    // A plan that would drop an attachment is corrected like an invalid one; failing that, one model serves the turn whole.
    const problem = verdict.ok ? uncoveredAttachment(verdict.plan.subtasks, p.attached) : verdict.problem;
    if (problem === null && verdict.ok) return verdict.plan;
    rejected = { answer, problem: problem ?? '' };
  }
  return null;
}

/** The planner's text answer; null when the call failed in any way (refused, unreachable, deadline, no text). */
async function askPlanner(p: PlannerRequest, body: Record<string, unknown>): Promise<string | null> {
  const deadlines = deadlinesFor(p.endpoint.tier, p.services.timeouts, false);
  const deadline = new UpstreamDeadline(deadlines.requestMs, p.req, 'model', p.endpoint.tier, null);
  try {
    // An error status is thrown (and answered null) like any other failure.
    const res = await callUpstream(
      p.services.upstream,
      p.endpoint,
      {
        path: '/chat/completions',
        body: Buffer.from(JSON.stringify(body)),
        signal: deadline,
        headersTimeoutMs: deadlines.requestMs + 1000,
        bodyTimeoutMs: deadlines.requestMs + 1000,
        requestId: p.req.requestId,
      },
      false,
    );
    const json = JSON.parse(res.body.toString('utf8')) as { choices?: { message?: { content?: unknown } }[] };
    const content = json.choices?.[0]?.message?.content;
    return typeof content === 'string' ? content : null;
  } catch {
    return null;
  } finally {
    deadline.done();
  }
}
