/**
 * The approvals page (docs/exec.md "Approvals"): approvals of the workspaces the user can read, pending
 * first, each showing what would run: the tool and its arguments (pretty-printed; a long string is folded
 * into a `<details>` with its full text), the agent, the workspace, who asked (key and user, by name), the
 * stage and the time left; a decision shows who made it, by name. Accept and reject for admins and owners
 * go through the same use case as `POST /v1/exec/approvals/{id}/accept|reject`.
 */
import type { ApprovalView, Named } from '../../app/approval-views.js';
import { csrfField, projectDocument, when, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface ApprovalsPageData {
  readonly pending: readonly ApprovalView[];
  readonly decided: readonly ApprovalView[];
  readonly writable: boolean;
  readonly now: number;
}

/** A string longer than this is shown cut, its full text folded below. */
export const FOLD_AT = 120;
const SHOWN_OF_FOLDED = 60;

/** Pretty-printed JSON with long strings cut, and the cut ones by their path, in full. */
export function foldedJson(value: unknown): { text: string; folded: { path: string; full: string }[] } {
  const folded: { path: string; full: string }[] = [];
  const cut = (v: unknown, path: string): unknown => {
    if (typeof v === 'string' && v.length > FOLD_AT) {
      folded.push({ path, full: v });
      return `${v.slice(0, SHOWN_OF_FOLDED)}… (${v.length - SHOWN_OF_FOLDED} more characters, below)`;
    }
    if (Array.isArray(v)) return v.map((x, i) => cut(x, `${path}[${i}]`));
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x, path === '' ? k : `${path}.${k}`)]));
    return v;
  };
  return { text: JSON.stringify(cut(value, ''), null, 2), folded };
}

function argumentsBlock(args: Record<string, unknown> | null): SafeHtml {
  if (args === null) return html`<p class="muted">The invocation's arguments could not be read.</p>`;
  const { text, folded } = foldedJson(args);
  return html`<pre class="arguments">${text}</pre>${folded.map(
    (f) => html`<details class="folded"><summary><code>${f.path}</code> in full (${f.full.length} characters)</summary><pre>${f.full}</pre></details>`,
  )}`;
}

const named = (n: Named | null, none: string): SafeHtml => (n ? html`${n.name} <small><code>${n.id}</code></small>` : html`<span class="muted">${none}</span>`);

/** `4 min 10 s`, `2 h 5 min`; a deadline passed reads as due now (the clock's next tick escalates it). */
export function timeLeft(ms: number): string {
  if (ms <= 0) return 'due now';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function stageCell(v: ApprovalView, now: number): SafeHtml {
  const a = v.approval;
  const stage = a.chain[a.stage];
  const next = a.chain[a.stage + 1];
  const of = html`stage ${a.stage + 1} of ${a.chain.length}${stage ? html`: <strong>${stage.target}</strong>` : ''}`;
  if (a.state !== 'pending' || a.stageDeadlineAt === null) return html`<span class="stage">${of}</span>`;
  const then = next ? `then ${next.target}` : 'then it expires';
  return html`<span class="stage">${of}</span><br><span class="time-left">${timeLeft(a.stageDeadlineAt - now)} left</span> <small>(${then}; ${when(a.stageDeadlineAt)})</small>`;
}

function card(frame: ProjectFrame, v: ApprovalView, writable: boolean, now: number): SafeHtml {
  const a = v.approval;
  const act = (verb: string): string => projectPath(frame.project.id, 'approvals', a.id, verb);
  const controls =
    writable && a.state === 'pending'
      ? html`<div class="actions"><form method="post" action="${act('accept')}">${csrfField(frame.principal)}<button type="submit">Accept</button></form>
<form method="post" action="${act('reject')}" class="reject">${csrfField(frame.principal)}<input name="reason" placeholder="reason (optional)"><button type="submit" class="danger">Reject</button></form></div>`
      : '';
  const agent = v.agent ? html`${v.agent.name} <small><code>${v.agent.id}</code>${v.agent.how === 'would-run' ? ' (would run it now)' : ''}</small>` : html`<span class="muted">no agent online offers it</span>`;
  const decision =
    a.state === 'pending'
      ? ''
      : html`<dt>Decided</dt><dd class="decider">${a.state === 'expired' ? html`<span class="muted">no one: it expired</span>` : named(v.decider, 'unknown')}${a.decidedAt !== null ? html` <small>${when(a.decidedAt)}</small>` : ''}${a.reason ? html`<br><q>${a.reason}</q>` : ''}</dd>`;
  return html`<article class="card approval" data-approval-id="${a.id}">
<h3><code class="tool">${a.toolName}</code> <span class="status ${a.state}">${a.state}</span> <small>${a.risk}</small></h3>
<dl class="facts">
<dt>Agent</dt><dd class="agent">${agent}</dd>
<dt>Workspace</dt><dd class="workspace"><code>${a.workspaceId}</code></dd>
<dt>Requested by</dt><dd class="requester">${named(v.requesterKey, 'no key recorded')} · ${named(v.requesterUser, 'a key with no user')}</dd>
<dt>Stage</dt><dd>${stageCell(v, now)}</dd>
<dt>Requested</dt><dd>${when(a.createdAt)} <small><code>${a.invocationId}</code></small></dd>
${decision}
</dl>
<h4>Arguments</h4>${argumentsBlock(v.arguments)}
${controls}</article>`;
}

function list(frame: ProjectFrame, items: readonly ApprovalView[], writable: boolean, now: number, empty: string): SafeHtml {
  if (items.length === 0) return html`<p class="muted empty">${empty}</p>`;
  return html`${items.map((v) => card(frame, v, writable, now))}`;
}

export function renderApprovalsPage(frame: ProjectFrame, d: ApprovalsPageData): string {
  return projectDocument(
    frame,
    html`<section id="pending"><h2>Pending</h2>${list(frame, d.pending, d.writable, d.now, 'Nothing waits for a decision.')}</section>
<section id="decided"><h2>Recent decisions</h2>${list(frame, d.decided, false, d.now, 'No decided approvals yet.')}</section>`,
  );
}
