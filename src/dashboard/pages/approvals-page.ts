/**
 * The approvals page (docs/exec.md "Approvals"): approvals of the workspaces the user can read, pending
 * first, with accept and reject for admins and owners. Deciding goes through the same use case as
 * `POST /v1/exec/approvals/{id}/accept|reject`, with the user's id as `decided_by`.
 */
import type { Approval } from '../../core/exec/approval-machine.js';
import { csrfField, projectDocument, when, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface ApprovalsPageData {
  readonly pending: readonly Approval[];
  readonly decided: readonly Approval[];
  readonly writable: boolean;
}

function row(frame: ProjectFrame, a: Approval, writable: boolean): SafeHtml {
  const stage = a.chain[a.stage];
  const act = (verb: string): string => projectPath(frame.project.id, 'approvals', a.id, verb);
  const controls =
    writable && a.state === 'pending'
      ? html`<form method="post" action="${act('accept')}">${csrfField(frame.principal)}<button type="submit">Accept</button></form>
<form method="post" action="${act('reject')}" class="reject">${csrfField(frame.principal)}<input name="reason" placeholder="reason (optional)"><button type="submit" class="danger">Reject</button></form>`
      : '';
  return html`<tr data-approval-id="${a.id}"><td><code>${a.toolName}</code><br><small>${a.invocationId}</small></td><td>${a.risk}</td><td><code>${a.workspaceId}</code></td>
<td><span class="status ${a.state}">${a.state}</span>${a.decidedBy ? html`<br><small>by ${a.decidedBy}${a.reason ? `: ${a.reason}` : ''}</small>` : ''}</td>
<td>${a.stage + 1} of ${a.chain.length}${stage ? html`<br><small>${stage.target}</small>` : ''}</td><td>${when(a.createdAt)}${a.state === 'pending' ? html`<br><small>escalates ${when(a.stageDeadlineAt)}</small>` : ''}</td>
<td class="actions">${controls}</td></tr>`;
}

function table(frame: ProjectFrame, items: readonly Approval[], writable: boolean, empty: string): SafeHtml {
  if (items.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<table class="approvals"><thead><tr><th>Tool</th><th>Risk</th><th>Workspace</th><th>State</th><th>Stage</th><th>Created</th><th></th></tr></thead><tbody>${items.map((a) => row(frame, a, writable))}</tbody></table>`;
}

export function renderApprovalsPage(frame: ProjectFrame, d: ApprovalsPageData): string {
  return projectDocument(
    frame,
    html`<section class="card"><h2>Pending</h2>${table(frame, d.pending, d.writable, 'Nothing waits for a decision.')}</section>
<section class="card"><h2>Recent decisions</h2>${table(frame, d.decided, false, 'No decided approvals yet.')}</section>`,
  );
}
