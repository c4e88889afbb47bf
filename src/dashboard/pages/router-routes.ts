/**
 * The semantic router page's handlers: settings (the PATCH route's parser and use case), rule create,
 * edit and delete (the rules routes' parsers and use case), decisions and health (the same reads as the
 * decisions and health routes). A rule saved here is the rule `GET .../semantic-router/rules` returns.
 */
import type { RoutingRule } from '../../core/routing/types.js';
import { GatewayError } from '../../errors.js';
import { parseRuleCreate, parseRuleUpdate, parseSettingsPatch } from '../../schemas/semantic-router.js';
import type { Notice } from './layout.js';
import { projectRoute, readForm, refusalNotice, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';
import { ruleBodyFromForm, type RuleTarget } from './rule-form.js';
import { renderRouterPage, renderRuleEditor } from './router-page.js';
import { settingsPatchFromForm } from './router-settings-form.js';

/** SPEC "Other limits": the decisions route's default page. */
const DECISIONS_SHOWN = 50;

const targetsOf = (deps: PageDeps, projectId: string): RuleTarget[] =>
  deps.catalog
    .endpoints(projectId)
    .filter((e) => e.kind === 'chat')
    .map((e) => ({ id: e.id, slug: e.slug, status: e.status }));

async function render(deps: PageDeps, page: ProjectPage, status: number, notice: Notice | null, ruleFormSent: URLSearchParams | null = null): Promise<void> {
  const id = page.project.id;
  const [config, decisions, health] = await Promise.all([deps.router.config(id), deps.router.decisions(id, DECISIONS_SHOWN), deps.router.healthReport(id)]);
  page.send(
    status,
    renderRouterPage(page.frame('router', notice), {
      settings: deps.router.settings(id),
      config,
      targets: targetsOf(deps, id),
      decisions,
      health,
      writable: page.writable,
      mayReadWorkspace: page.mayReadWorkspace,
      ruleFormSent,
    }),
  );
}

function findRule(deps: PageDeps, projectId: string, ruleId: string): RoutingRule {
  const rule = deps.router.rules(projectId).find((r) => r.id === ruleId);
  if (!rule) throw new GatewayError('rule_not_found', { message: `Project ${projectId} has no routing rule ${JSON.stringify(ruleId)}.` });
  return rule;
}

export function routerPages(deps: PageDeps): PageDef[] {
  const route = (method: 'GET' | 'POST', path: string, run: (page: ProjectPage) => Promise<void> | void): PageDef =>
    projectRoute(deps, { method, path: `/router${path}`, write: method === 'POST' }, run);
  const editor = (page: ProjectPage, status: number, rule: RoutingRule, notice: Notice | null, sent: URLSearchParams | null): void =>
    page.send(status, renderRuleEditor(page.frame('router', notice), rule, targetsOf(deps, page.project.id), sent));

  return [
    route('GET', '', (page) => render(deps, page, 200, null)),
    route('POST', '/settings', async (page) => {
      const form = await readForm(page.ctx);
      const id = page.project.id;
      try {
        const patch = parseSettingsPatch(settingsPatchFromForm(form, deps.router.settings(id)));
        const changed = Object.keys(patch).length;
        if (changed > 0) await deps.router.patchSettings(id, patch);
        await render(deps, page, 200, { kind: 'ok', text: changed > 0 ? `Settings saved (${changed} changed).` : 'Nothing to change.' });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(deps, page, status, notice);
      }
    }),
    route('POST', '/rules', async (page) => {
      const form = await readForm(page.ctx);
      try {
        const rule = await deps.router.createRule(page.project.id, parseRuleCreate(ruleBodyFromForm(form, null)));
        await render(deps, page, 201, { kind: 'ok', text: `Rule ${rule.name || rule.id} added.` });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(deps, page, status, notice, form);
      }
    }),
    route('GET', '/rules/:rule', (page) => {
      try {
        editor(page, 200, findRule(deps, page.project.id, page.params.rule ?? ''), null, null);
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        return render(deps, page, status, notice);
      }
    }),
    route('POST', '/rules/:rule', async (page) => {
      const form = await readForm(page.ctx);
      const id = page.project.id;
      let base: RoutingRule;
      try {
        base = findRule(deps, id, page.params.rule ?? '');
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        return render(deps, page, status, notice);
      }
      try {
        const rule = await deps.router.updateRule(id, base.id, parseRuleUpdate(ruleBodyFromForm(form, base)));
        await render(deps, page, 200, { kind: 'ok', text: `Rule ${rule.name || rule.id} saved.` });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        editor(page, status, base, notice, form);
      }
    }),
    route('POST', '/rules/:rule/delete', async (page) => {
      await readForm(page.ctx);
      await deps.router.deleteRule(page.project.id, page.params.rule ?? '');
      await render(deps, page, 200, { kind: 'ok', text: 'Rule deleted.' });
    }),
  ];
}
