/**
 * The webhooks page's handlers: list and create, one endpoint's deliveries, a test delivery, enable /
 * disable and delete, each through the WebhookManager the `/v1/webhooks` routes use, with the API's body
 * schemas reading the forms.
 */
import { parseCreateWebhook, parseUpdateWebhook } from '../../schemas/webhooks.js';
import type { Notice } from './layout.js';
import { projectRoute, readForm, refusalNotice, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';
import { renderWebhookDetail, renderWebhooksPage, webhookBodyFromForm, type WebhooksPageData } from './webhooks-page.js';
import type { TestResult } from '../../core/webhooks/webhook-manager.js';

/** SPEC: 20 webhook endpoints per project, so one page holds them all. */
const PAGE = 100;
const DELIVERIES_SHOWN = 50;

export function webhooksPages(deps: PageDeps): PageDef[] {
  const route = (method: 'GET' | 'POST', path: string, run: (page: ProjectPage) => Promise<void> | void): PageDef =>
    projectRoute(deps, { method, path: `/webhooks${path}`, write: method === 'POST' }, run);
  const list = async (page: ProjectPage, status: number, extra: Partial<WebhooksPageData> & { notice?: Notice | null }): Promise<void> => {
    const webhooks = (await deps.webhooks.list(page.project.id, PAGE, null)).items;
    page.send(status, renderWebhooksPage(page.frame('webhooks', extra.notice), { webhooks, writable: page.writable, ...extra }));
  };
  const detail = async (page: ProjectPage, status: number, notice: Notice | null, test: TestResult | null = null): Promise<void> => {
    const id = page.project.id;
    const webhook = await deps.webhooks.get(id, page.params.webhook ?? '');
    const deliveries = (await deps.webhooks.deliveries(id, webhook.id, DELIVERIES_SHOWN, null)).items;
    page.send(status, renderWebhookDetail(page.frame('webhooks', notice), { webhook, deliveries, writable: page.writable, test }));
  };
  /** An unknown endpoint is the list with the reason; every other refusal is the endpoint's page with it. */
  const refused = async (page: ProjectPage, err: unknown): Promise<void> => {
    const { status, notice } = refusalNotice(err);
    try {
      await detail(page, status, notice);
    } catch {
      await list(page, status, { notice });
    }
  };

  return [
    route('GET', '', (page) => list(page, 200, {})),
    route('POST', '', async (page) => {
      const form = await readForm(page.ctx);
      try {
        const { record, secret } = await deps.webhooks.create(page.project.id, parseCreateWebhook(webhookBodyFromForm(form)));
        await list(page, 201, { secret: { webhookId: record.id, value: secret }, notice: { kind: 'ok', text: `Webhook endpoint ${record.url} added.` } });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await list(page, status, { form, notice });
      }
    }),
    route('GET', '/:webhook', async (page) => {
      try {
        await detail(page, 200, null);
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await list(page, status, { notice });
      }
    }),
    route('POST', '/:webhook/test', async (page) => {
      await readForm(page.ctx);
      try {
        const result = await deps.webhooks.test(page.project.id, page.params.webhook ?? '');
        await detail(page, 200, null, result);
      } catch (err) {
        await refused(page, err);
      }
    }),
    ...(['enable', 'disable'] as const).map((verb) =>
      route('POST', `/:webhook/${verb}`, async (page) => {
        await readForm(page.ctx);
        try {
          const body = parseUpdateWebhook({ is_active: verb === 'enable' });
          await deps.webhooks.update(page.project.id, page.params.webhook ?? '', { isActive: body.is_active ?? verb === 'enable' });
          await detail(page, 200, { kind: 'ok', text: verb === 'enable' ? 'Endpoint enabled.' : 'Endpoint disabled: no deliveries until it is enabled again.' });
        } catch (err) {
          await refused(page, err);
        }
      }),
    ),
    route('POST', '/:webhook/delete', async (page) => {
      await readForm(page.ctx);
      try {
        await deps.webhooks.delete(page.project.id, page.params.webhook ?? '');
        await list(page, 200, { notice: { kind: 'ok', text: 'Webhook endpoint deleted, with its delivery records.' } });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await list(page, status, { notice });
      }
    }),
  ];
}
