/**
 * The keys page's handlers: list, create (the key belongs to the signed-in user and reaches at most the
 * workspaces that user reads), rotate, revoke. Each runs app/key-management.ts, as the management API does;
 * values are minted under the project's slug (`svc_<slug>_...`, SPEC "API key": minted in the dashboard).
 */
import { parseCreateKey } from '../../schemas/management-keys.js';
import type { Notice } from './layout.js';
import { renderKeysPage, keyBodyFromForm, type KeysPageData } from './keys-page.js';
import { projectRoute, readForm, refusalNotice, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';

async function render(deps: PageDeps, page: ProjectPage, status: number, extra: Partial<KeysPageData> & { notice?: Notice | null }): Promise<void> {
  const { project } = page;
  const [keys, owners] = await Promise.all([deps.keys.list(project.id), deps.keys.owners(project.id)]);
  const data: KeysPageData = {
    keys,
    owners,
    endpoints: deps.catalog.endpoints(project.id).map((e) => ({ id: e.id, slug: e.slug })),
    workspaces: page.workspaces.map((w) => ({ id: w.id, name: w.name })),
    writable: page.writable,
    ...extra,
  };
  page.send(status, renderKeysPage(page.frame('keys', extra.notice), data));
}

export function keysPages(deps: PageDeps): PageDef[] {
  const route = (method: 'GET' | 'POST', path: string, run: (page: ProjectPage) => Promise<void> | void): PageDef =>
    projectRoute(deps, { method, path: `/keys${path}`, write: method === 'POST' }, run);
  return [
    route('GET', '', (page) => render(deps, page, 200, {})),
    route('POST', '', async (page) => {
      const form = await readForm(page.ctx);
      try {
        const readable = page.principal.workspacesIn(page.project.id);
        const created = await deps.keys.create(page.project, parseCreateKey(keyBodyFromForm(form)), {
          source: 'dashboard',
          valueSegment: page.project.slug,
          owner: { userId: page.principal.userId, readable },
          issuer: page.principal.userId,
        });
        await render(deps, page, 201, { revealed: { keyId: created.id, value: created.value, action: 'created' }, notice: { kind: 'ok', text: `API key ${created.name ?? created.id} created.` } });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(deps, page, status, { form, notice });
      }
    }),
    route('POST', '/:key/rotate', async (page) => {
      await readForm(page.ctx);
      try {
        const rotator = { issuer: page.principal.userId, userId: page.principal.userId, reach: page.principal.workspacesIn(page.project.id) };
        const rotated = await deps.keys.rotate(page.project.id, page.params.key ?? '', page.project.slug, rotator);
        await render(deps, page, 200, { revealed: { keyId: rotated.id, value: rotated.value, action: 'rotated' }, notice: { kind: 'ok', text: `API key ${rotated.name ?? rotated.id} rotated.` } });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(deps, page, status, { notice });
      }
    }),
    route('POST', '/:key/revoke', async (page) => {
      await readForm(page.ctx);
      try {
        const revoked = await deps.keys.revoke(page.project.id, page.params.key ?? '', 'dashboard');
        await render(deps, page, 200, { notice: { kind: 'ok', text: `API key ${revoked.name ?? revoked.id} revoked; it no longer authenticates.` } });
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(deps, page, status, { notice });
      }
    }),
  ];
}
