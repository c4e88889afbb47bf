/**
 * The routing rule editor (SPEC "Routing rule"): one form for a new rule and for an existing one. The form
 * is turned into the management API's flat body, then read by the API's own schema (parseRuleCreate /
 * parseRuleUpdate) and written by the same use case, so the two surfaces refuse the same rules.
 */
import type { RoutingRule } from '../../core/routing/types.js';
import type { DashboardPrincipal } from '../principal.js';
import { csrfField } from './layout.js';
import { html, type SafeHtml } from './markup.js';

export interface RuleTarget {
  readonly id: string;
  readonly slug: string;
  readonly status: string;
}

/** `rule` absent: the new-rule form. `form`: what a refused submission said, so it comes back filled in. */
export function ruleForm(principal: DashboardPrincipal, action: string, targets: readonly RuleTarget[], rule: RoutingRule | null, form?: URLSearchParams | null): SafeHtml {
  const sent = (name: string, stored: string): string => (form ? (form.get(name) ?? '') : stored);
  const checked = (name: string, stored: boolean): boolean => (form ? form.get(name) === 'on' : stored);
  const endpointId = sent('endpoint_id', rule?.action.endpoint_id ?? '');
  const words = sent('query_contains', (rule?.match.query_contains ?? []).join('\n'));
  return html`<form method="post" action="${action}" class="stacked rule-form">
${csrfField(principal)}
<label>Name <input name="name" maxlength="200" value="${sent('name', rule?.name ?? '')}"></label>
<label>Query contains (one entry per line; every entry must appear, ignoring case)
<textarea name="query_contains" rows="3">${words}</textarea></label>
<div class="row"><label>Min input tokens <input name="min_input_tokens" inputmode="numeric" value="${sent('min_input_tokens', rule?.match.min_input_tokens?.toString() ?? '')}"></label>
<label>Exact request model <input name="exact_request_model" value="${sent('exact_request_model', rule?.match.exact_request_model ?? '')}"></label></div>
<label>Target endpoint
<select name="endpoint_id">${rule ? '' : html`<option value="">choose an endpoint</option>`}${targets.map(
    (t) => html`<option value="${t.id}"${t.id === endpointId ? html` selected` : ''}>${t.slug}${t.status === 'active' ? '' : ` (${t.status})`}</option>`,
  )}${rule && !targets.some((t) => t.id === endpointId) ? html`<option value="${endpointId}" selected>${endpointId} (not available)</option>` : ''}</select></label>
<div class="row"><label>Priority <input name="priority" inputmode="numeric" value="${sent('priority', String(rule?.priority ?? 0))}"></label>
<label class="inline"><input type="checkbox" name="fallback_to_classification"${checked('fallback_to_classification', rule?.action.fallback_to_classification ?? true) ? html` checked` : ''}> Fall back to classification when the target cannot serve</label>
<label class="inline"><input type="checkbox" name="enabled"${checked('enabled', rule?.enabled ?? true) ? html` checked` : ''}> Enabled</label></div>
<button type="submit">${rule ? 'Save rule' : 'Add rule'}</button>
</form>`;
}

const integerOrText = (raw: string): number | string => (/^-?\d+$/.test(raw) ? Number(raw) : raw);

/**
 * The form as the API's flat rule body. On an edit (`base` given) a field emptied that the rule had is sent
 * as null, which the API refuses in words (min_input_tokens and exact_request_model cannot be cleared).
 */
export function ruleBodyFromForm(form: URLSearchParams, base: RoutingRule | null): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const text = (name: string): string => (form.get(name) ?? '').trim();
  body.name = text('name');
  body.query_contains = (form.get('query_contains') ?? '').split(/\r?\n/).map((w) => w.trim()).filter((w) => w !== '');
  const min = text('min_input_tokens');
  if (min !== '') body.min_input_tokens = integerOrText(min);
  else if (base?.match.min_input_tokens != null) body.min_input_tokens = null;
  const model = text('exact_request_model');
  if (model !== '') body.exact_request_model = model;
  else if (base?.match.exact_request_model != null) body.exact_request_model = null;
  const endpoint = text('endpoint_id');
  if (endpoint !== '' || !base) body.endpoint_id = endpoint;
  const priority = text('priority');
  if (priority !== '') body.priority = integerOrText(priority);
  body.fallback_to_classification = form.get('fallback_to_classification') === 'on';
  body.enabled = form.get('enabled') === 'on';
  return body;
}
