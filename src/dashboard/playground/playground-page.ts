/**
 * The playground page's markup: pick a direct endpoint or the semantic router, a workspace the user reads,
 * the harness switches (each one a SPEC request header, checked as the surface default has it: on, tool
 * top-k off), write messages; the conversation is kept in the page. The page's script
 * (assets/playground-script.ts, served by our own route) sends each turn and shows the answer as it streams,
 * with the decision, the usage and the harness features that acted beside it. Every value is escaped.
 */
import { resolveHarness } from '../../core/chat/header-flags.js';
import type { EndpointRecord, WorkspaceRecord } from '../../core/records.js';
import { projectDocument, type ProjectFrame } from '../pages/layout.js';
import { html } from '../pages/markup.js';
import { featureLabel, playgroundTurnPath } from './playground-turn.js';
import { HARNESS_FEATURES } from './turn-request.js';

export const PLAYGROUND_SCRIPT_PATH = '/dashboard/assets/playground.js';
export const PLAYGROUND_STYLESHEET_PATH = '/dashboard/assets/playground.css';

export interface PlaygroundView {
  readonly projectId: string;
  /** Active chat endpoints serving a workspace the user reads. */
  readonly endpoints: readonly EndpointRecord[];
  readonly workspaces: readonly WorkspaceRecord[];
  /** Preselected: the project's default workspace when the user reads it. */
  readonly defaultWorkspace: string | null;
}

function harnessFieldset(): ReturnType<typeof html> {
  const defaults = resolveHarness({}, true);
  const boxes = HARNESS_FEATURES.map((f) => {
    const label = featureLabel(f);
    return html`<label class="inline"><input type="checkbox" name="feature" data-feature="${f}" value="${label}"${defaults[f] ? html` checked` : ''}> ${label}</label>`;
  });
  return html`<fieldset class="harness"><legend>Harness (on by default here; each switch is its request header)</legend>
<label class="inline"><input type="checkbox" id="augment" name="augment" checked> <strong>X-Service-Augment</strong></label>
<div class="grid">${boxes}</div></fieldset>`;
}

export function renderPlaygroundPage(frame: ProjectFrame, view: PlaygroundView): string {
  const targets = [
    html`<option value="router">Semantic router</option>`,
    ...view.endpoints.map((e) => html`<option value="endpoint:${e.slug}">${e.name} (${e.slug}, ${e.model.id})</option>`),
  ];
  const workspaces = view.workspaces.map((w) => html`<option value="${w.id}"${w.id === view.defaultWorkspace ? html` selected` : ''}>${w.name} (${w.id})</option>`);
  const body = html`<link rel="stylesheet" href="${PLAYGROUND_STYLESHEET_PATH}">
<p class="muted">Turns run as you (usage rows carry your user id), through the same limits, budgets and routing as API traffic.</p>
<div class="playground">
<section class="chat card">
<ol id="conversation" class="conversation" aria-live="polite"></ol>
<p id="playground-error" class="notice error" role="alert" hidden></p>
<form id="playground-form" class="stacked" data-turn-url="${playgroundTurnPath(view.projectId)}">
<div class="row">
<label>Target <select id="target" name="target">${targets}</select></label>
<label>Workspace <select id="workspace" name="workspace">${workspaces}</select></label>
<label>max_tokens <input id="max-tokens" name="max_tokens" type="number" min="1" placeholder="none"></label>
</div>
<label>Message <textarea id="message" name="message" rows="3" required></textarea></label>
${harnessFieldset()}
<button type="submit" id="send">Send</button> <button type="button" id="new-conversation" class="danger">New conversation</button>
</form>
<noscript><p class="notice error">The playground needs JavaScript (our own script, from this server).</p></noscript>
</section>
<aside class="turn-facts card">
<h2>Last turn</h2>
<dl>
<dt>Request</dt><dd id="turn-id">—</dd>
<dt>Endpoint</dt><dd id="decision-endpoint">—</dd>
<dt>Model</dt><dd id="decision-model">—</dd>
<dt>Score</dt><dd id="decision-score">—</dd>
<dt>Rule</dt><dd id="decision-rule">—</dd>
<dt>Reason</dt><dd id="decision-reason">—</dd>
</dl>
<h2>Usage</h2>
<dl>
<dt>Prompt tokens</dt><dd id="usage-prompt">—</dd>
<dt>Completion tokens</dt><dd id="usage-completion">—</dd>
<dt>Total tokens</dt><dd id="usage-total">—</dd>
</dl>
<h2>Harness</h2>
<p>Acted: <span id="harness-acted">—</span></p>
<p class="muted">On: <span id="harness-enabled">—</span></p>
</aside>
</div>
<script src="${PLAYGROUND_SCRIPT_PATH}" defer></script>`;
  return projectDocument(frame, body);
}
