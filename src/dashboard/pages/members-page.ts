/**
 * The members page (SPEC Authentication 10; docs/decisions.md "Dashboard members"): who has a role in the
 * project, the role and the workspaces each reads. Owners add a member (an existing user by e-mail, or a
 * new one whose generated password is shown once), change a role or a workspace list, and remove a
 * member; admins and members read the list.
 */
import type { Member } from '../auth/project-members.js';
import { csrfField, projectDocument, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface MembersPageData {
  readonly members: readonly Member[];
  readonly workspaces: readonly { readonly id: string; readonly name: string }[];
  readonly owner: boolean;
  /** A new user's password, shown once. */
  readonly created?: { readonly email: string; readonly password: string } | null;
  /** The add form as last sent, when it was refused. */
  readonly form?: URLSearchParams | null;
}

const ROLES = ['member', 'admin', 'owner'] as const;

/** Role select and the workspace choice (every workspace, or those ticked), as one fieldset. */
function roleFields(d: MembersPageData, role: string, workspaceIds: readonly string[] | null): SafeHtml {
  const selected = workspaceIds !== null;
  const ticked = new Set(workspaceIds ?? []);
  return html`<label class="inline">Role <select name="role">${ROLES.map((r) => html`<option value="${r}"${r === role ? html` selected` : ''}>${r}</option>`)}</select></label>
<label class="inline"><input type="radio" name="workspace_mode" value="all"${selected ? '' : html` checked`}> Every workspace</label>
<label class="inline"><input type="radio" name="workspace_mode" value="selected"${selected ? html` checked` : ''}> Selected:</label>
${d.workspaces.map((w) => html`<label class="inline"><input type="checkbox" name="workspaces" value="${w.id}"${ticked.has(w.id) ? html` checked` : ''}> ${w.name}</label>`)}`;
}

function workspacesText(d: MembersPageData, ids: readonly string[] | null): SafeHtml {
  if (ids === null) return html`every workspace`;
  const names = new Map(d.workspaces.map((w) => [w.id, w.name]));
  return html`${ids.map((id, i) => html`${i > 0 ? ', ' : ''}${names.get(id) ?? id} <code>${id}</code>`)}`;
}

function row(frame: ProjectFrame, d: MembersPageData, m: Member): SafeHtml {
  const you = m.user.id === frame.principal.userId ? html` <span class="you">(you)</span>` : '';
  const path = (verb: string): string => projectPath(frame.project.id, 'members', m.user.id, verb);
  const controls = d.owner
    ? html`<td class="actions"><form method="post" action="${path('role')}" class="member-role">${csrfField(frame.principal)}${roleFields(d, m.role, m.workspaceIds)}<button type="submit">Save</button></form>
<form method="post" action="${path('remove')}">${csrfField(frame.principal)}<button type="submit" class="danger" data-action="remove">Remove</button></form></td>`
    : '';
  return html`<tr data-user-id="${m.user.id}"><td>${m.user.name}${you}<br><small>${m.user.email}</small> <small><code>${m.user.id}</code></small></td>
<td class="role">${m.role}</td><td class="workspaces">${workspacesText(d, m.workspaceIds)}</td><td>${m.user.twoFactor ? 'on' : 'off'}</td>${controls}</tr>`;
}

function addForm(frame: ProjectFrame, d: MembersPageData): SafeHtml {
  const f = d.form;
  const mode = f?.get('workspace_mode') === 'selected' ? f.getAll('workspaces') : null;
  return html`<section class="card" id="add-member"><h2>Add a member</h2>
<p class="muted">An existing user (by e-mail) gets a role here; anyone else becomes a new user with a password shown once, to pass on: they change it on their account page.</p>
<form method="post" action="${projectPath(frame.project.id, 'members')}" class="stacked">${csrfField(frame.principal)}
<div class="row"><label>E-mail <input type="email" name="email" required value="${f?.get('email') ?? ''}"></label>
<label>Name (new users) <input name="name" value="${f?.get('name') ?? ''}"></label></div>
<fieldset><legend>Role and workspaces read</legend>${roleFields(d, f?.get('role') ?? 'member', mode)}</fieldset>
<button type="submit">Add member</button></form></section>`;
}

export function renderMembersPage(frame: ProjectFrame, d: MembersPageData): string {
  const created = d.created
    ? html`<div class="secret" id="new-member"><p>${d.created.email} can sign in with this password, shown only now: pass it on; they change it on their account page.</p><code class="value" id="new-password">${d.created.password}</code></div>`
    : '';
  const table =
    d.members.length === 0
      ? html`<p class="muted empty">No members yet.</p>`
      : html`<table class="members"><thead><tr><th>User</th><th>Role</th><th>Workspaces read</th><th>Two-factor</th>${d.owner ? html`<th></th>` : ''}</tr></thead><tbody>${d.members.map((m) => row(frame, d, m))}</tbody></table>`;
  return projectDocument(
    frame,
    html`${created}${table}
${d.owner ? addForm(frame, d) : html`<p class="muted">Only owners add, change and remove members.</p>`}`,
  );
}
