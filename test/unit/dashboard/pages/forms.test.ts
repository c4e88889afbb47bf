/**
 * The dashboard's forms are turned into the management API's bodies and read by the API's own parsers
 * (so both surfaces refuse the same input); these check the turning, and that markup escapes.
 */
import { describe, expect, it } from 'vitest';
import { keyBodyFromForm } from '../../../../src/dashboard/pages/keys-page.js';
import { html } from '../../../../src/dashboard/pages/markup.js';
import { ruleBodyFromForm } from '../../../../src/dashboard/pages/rule-form.js';
import { settingsPatchFromForm } from '../../../../src/dashboard/pages/router-settings-form.js';
import { columnChart, niceCeiling } from '../../../../src/dashboard/pages/svg-chart.js';
import { parseCreateKey } from '../../../../src/schemas/management-keys.js';
import { parseSettingsPatch } from '../../../../src/schemas/semantic-router.js';
import type { RouterSettings } from '../../../../src/core/routing/types.js';
import { GatewayError } from '../../../../src/errors.js';

const form = (pairs: [string, string][]): URLSearchParams => new URLSearchParams(pairs);

describe('keyBodyFromForm', () => {
  it('sends only what was filled in, lists split on commas and spaces, expiry read as UTC', () => {
    const body = keyBodyFromForm(
      form([
        ['name', ' ci '],
        ['scopes', 'inference'],
        ['scopes', 'execution'],
        ['workspace_mode', 'all'],
        ['allowed_ips', '10.0.0.0/8, 192.168.1.5  ::1'],
        ['blocked_ips', ''],
        ['quota_requests', '5'],
        ['quota_window', ''],
        ['expires_at', '2030-01-31T12:00'],
        ['endpoint_id', ''],
      ]),
    );
    expect(body).toEqual({ name: 'ci', scopes: ['inference', 'execution'], allowed_ips: ['10.0.0.0/8', '192.168.1.5', '::1'], quota_requests: 5, expires_at: '2030-01-31T12:00:00Z' });
    expect(parseCreateKey(body).expiresAt).toBe(Date.parse('2030-01-31T12:00:00Z'));
  });

  it('sends "selected workspaces" with none ticked as an empty list, which the API refuses in words', () => {
    const body = keyBodyFromForm(form([['workspace_mode', 'selected']]));
    expect(body.allowed_workspace_ids).toEqual([]);
  });

  it('passes a quota that is not a whole number through, so the API schema names the field', () => {
    const body = keyBodyFromForm(form([['quota_requests', 'lots']]));
    expect(() => parseCreateKey(body)).toThrow(GatewayError);
    try {
      parseCreateKey(body);
    } catch (err) {
      expect((err as GatewayError).param).toBe('quota_requests');
    }
  });
});

const SETTINGS: RouterSettings = {
  enabled: true,
  multiModelEnabled: true,
  similarityFloor: 0.3,
  switchMargin: 0.1,
  proximityBonus: 0.02,
  fallbackEndpointId: null,
  excludedEndpointIds: [],
  rules: [],
};

describe('settingsPatchFromForm', () => {
  const unchanged: [string, string][] = [
    ['semantic_router_enabled', 'true'],
    ['semantic_router_multi_model_enabled', 'true'],
    ['semantic_router_similarity_floor', '0.3'],
    ['semantic_router_switch_margin', '0.1'],
    ['semantic_router_proximity_bonus', '0.02'],
    ['semantic_router_fallback_endpoint_id', ''],
    ['excluded_offered', 'e1'],
    ['excluded_offered', 'e2'],
  ];

  it('sends nothing for a form submitted as rendered (a project following the defaults keeps following them)', () => {
    expect(settingsPatchFromForm(form(unchanged), SETTINGS)).toEqual({});
  });

  it('sends changed values, null for a reset, and out-of-range numbers as typed for the PATCH parser to refuse', () => {
    const sent = form([...unchanged.filter(([k]) => k !== 'semantic_router_similarity_floor' && k !== 'semantic_router_enabled'), ['semantic_router_similarity_floor', '0.5'], ['semantic_router_enabled', 'false'], ['reset', 'semantic_router_switch_margin']]);
    expect(settingsPatchFromForm(sent, SETTINGS)).toEqual({ semantic_router_similarity_floor: 0.5, semantic_router_enabled: false, semantic_router_switch_margin: null });
    const tooBig = form([...unchanged.filter(([k]) => k !== 'semantic_router_proximity_bonus'), ['semantic_router_proximity_bonus', '1.5']]);
    expect(() => parseSettingsPatch(settingsPatchFromForm(tooBig, SETTINGS))).toThrow(/semantic_router_proximity_bonus/);
  });

  it('keeps an exclusion of an endpoint the form had no box for', () => {
    const current = { ...SETTINGS, excludedEndpointIds: ['embed-id', 'e1'] };
    expect(settingsPatchFromForm(form([...unchanged, ['semantic_router_excluded_endpoint_ids', 'e2']]), current)).toEqual({
      semantic_router_excluded_endpoint_ids: ['embed-id', 'e2'],
    });
  });
});

describe('ruleBodyFromForm', () => {
  it('reads one query_contains entry per line and unticked boxes as false', () => {
    const body = ruleBodyFromForm(form([['name', 'code'], ['query_contains', 'python\r\n\r\n rust '], ['endpoint_id', 'e1'], ['priority', '3']]), null);
    expect(body).toEqual({ name: 'code', query_contains: ['python', 'rust'], endpoint_id: 'e1', priority: 3, fallback_to_classification: false, enabled: false });
  });

  it('sends null for a cleared min_input_tokens on an edit, which the API refuses (delete and recreate)', () => {
    const base = { id: 'rule_1', name: 'x', match: { query_contains: [], min_input_tokens: 100, exact_request_model: null }, action: { endpoint_id: 'e1', fallback_to_classification: true }, priority: 0, enabled: true };
    expect(ruleBodyFromForm(form([['min_input_tokens', '']]), base).min_input_tokens).toBeNull();
  });
});

describe('markup', () => {
  it('escapes interpolated text, including attribute quotes, but not nested markup', () => {
    const name = '<script>alert("x")</script>';
    expect(html`<p title="${name}">${name}${html`<b>ok</b>`}</p>`.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;<b>ok</b></p>',
    );
  });
});

describe('svg charts', () => {
  it('rounds the axis up to 1, 2 or 5 times a power of ten', () => {
    expect([0, 1, 7, 12, 40, 180, 2600].map(niceCeiling)).toEqual([1, 1, 10, 20, 50, 200, 5000]);
  });

  it('draws one rect per non-zero segment with its value in a title, and no style attribute', () => {
    const svg = columnChart('Requests', [
      { label: '11-01', segments: [{ value: 3, cls: 's1', name: 'requests' }] },
      { label: '11-02', segments: [{ value: 0, cls: 's1', name: 'requests' }] },
    ]).value;
    expect(svg.match(/<rect /g)).toHaveLength(1);
    expect(svg).toContain('<title>11-01: requests 3</title>');
    expect(svg).not.toContain('style=');
  });
});
