/**
 * The semantic router settings form (SPEC "Semantic router settings"). Only what the operator changed is
 * sent: a field left at its effective value stays as it is (a project following the deployment default
 * keeps following it), and "reset" sends null, the PATCH's reset. The patch then goes through the PATCH
 * route's own parser, so out-of-range numbers are refused with the same words, never clamped.
 */
import type { RouterSettings } from '../../core/routing/types.js';
import type { DashboardPrincipal } from '../principal.js';
import { csrfField } from './layout.js';
import { html, type SafeHtml } from './markup.js';

const NUMBERS = [
  ['semantic_router_similarity_floor', 'similarityFloor', 'Similarity floor (0 to 1)'],
  ['semantic_router_switch_margin', 'switchMargin', 'Switch margin (0 to 1)'],
  ['semantic_router_proximity_bonus', 'proximityBonus', 'Proximity bonus (0 to 1; 0 disables)'],
] as const;
const BOOLEANS = [
  ['semantic_router_enabled', 'enabled', 'Semantic routing'],
  ['semantic_router_multi_model_enabled', 'multiModelEnabled', 'Multi-model turns'],
] as const;

export interface EndpointChoice {
  readonly id: string;
  readonly slug: string;
}

const resetBox = (key: string): SafeHtml => html`<label class="reset"><input type="checkbox" name="reset" value="${key}"> reset to default</label>`;

export function settingsForm(principal: DashboardPrincipal, action: string, s: RouterSettings, endpoints: readonly EndpointChoice[], writable: boolean): SafeHtml {
  const off = writable ? '' : html` disabled`;
  const excluded = new Set(s.excludedEndpointIds);
  return html`<form method="post" action="${action}" class="stacked settings-form" id="router-settings">
${csrfField(principal)}
<div class="grid">
${BOOLEANS.map(
  ([key, field, label]) => html`<label>${label} <select name="${key}"${off}><option value="true"${s[field] ? html` selected` : ''}>on</option><option value="false"${s[field] ? '' : html` selected`}>off</option></select>${writable ? resetBox(key) : ''}</label>`,
)}
${NUMBERS.map(([key, field, label]) => html`<label>${label} <input name="${key}" inputmode="decimal" value="${String(s[field])}"${off}>${writable ? resetBox(key) : ''}</label>`)}
<label>Fallback endpoint <select name="semantic_router_fallback_endpoint_id"${off}><option value="">none</option>${endpoints.map(
    (e) => html`<option value="${e.id}"${s.fallbackEndpointId === e.id ? html` selected` : ''}>${e.slug}</option>`,
  )}${
    // A fallback the list does not offer (set through the API) stays selected, so saving keeps it.
    s.fallbackEndpointId !== null && !endpoints.some((e) => e.id === s.fallbackEndpointId)
      ? html`<option value="${s.fallbackEndpointId}" selected>${s.fallbackEndpointId} (not a chat endpoint)</option>`
      : ''
  }</select></label>
</div>
<fieldset><legend>Excluded from routing</legend>
${endpoints.map(
  (e) => html`<input type="hidden" name="excluded_offered" value="${e.id}"><label class="inline"><input type="checkbox" name="semantic_router_excluded_endpoint_ids" value="${e.id}"${excluded.has(e.id) ? html` checked` : ''}${off}> ${e.slug}</label>`,
)}
</fieldset>
${writable ? html`<button type="submit">Save settings</button>` : ''}
</form>`;
}

const numberOrText = (raw: string): number | string => (raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw);
const booleanOrText = (raw: string): boolean | string => (raw === 'true' ? true : raw === 'false' ? false : raw);
const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

/** The PATCH body the form means, against the effective settings it was rendered from. */
export function settingsPatchFromForm(form: URLSearchParams, current: RouterSettings): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  const reset = new Set(form.getAll('reset'));
  for (const [key, field] of BOOLEANS) {
    const raw = form.get(key);
    if (reset.has(key)) patch[key] = null;
    else if (raw !== null && booleanOrText(raw) !== current[field]) patch[key] = booleanOrText(raw);
  }
  for (const [key, field] of NUMBERS) {
    const raw = form.get(key);
    if (reset.has(key)) patch[key] = null;
    else if (raw !== null && numberOrText(raw) !== current[field]) patch[key] = numberOrText(raw);
  }
  const fallback = form.get('semantic_router_fallback_endpoint_id');
  if (fallback !== null && (fallback === '' ? null : fallback) !== current.fallbackEndpointId) patch.semantic_router_fallback_endpoint_id = fallback === '' ? null : fallback;
  // Only the endpoints the form offered are decided by its boxes; an exclusion of another endpoint (set
  // through the API) is kept, not dropped because it had no box.
  const offered = new Set(form.getAll('excluded_offered'));
  if (offered.size > 0) {
    const kept = current.excludedEndpointIds.filter((id) => !offered.has(id));
    const excluded = [...kept, ...form.getAll('semantic_router_excluded_endpoint_ids').filter((id) => offered.has(id))];
    if (!sameList(excluded, current.excludedEndpointIds)) patch.semantic_router_excluded_endpoint_ids = excluded;
  }
  return patch;
}
