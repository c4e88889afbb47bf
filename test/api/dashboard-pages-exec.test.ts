/**
 * The dashboard's approvals and webhooks pages against a real gateway with a scripted execution agent and
 * a local webhook receiver (issue 22 "Pages"): approvals decided in the page are the API's approvals
 * (decided_by is the user), members and users of other workspaces cannot decide, and a webhook endpoint
 * added in the page receives the test delivery sent from it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_B, WS_OPS } from '../helpers/exec-config.js';
import { connectTestAgent, type TestAgent } from '../helpers/exec-test-agent.js';
import { call, errorOf, expectError } from '../helpers/http.js';
import { runCli, startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { signInAs, type DashboardSession } from './dashboard-pages-session.js';

const keys = makeExecKeys();
let gw: GatewayProcess;
let agent: TestAgent;
let receiver: Receiver;

beforeAll(async () => {
  gw = await startGatewayProcess(execConfig(keys, { webhooks: true }));
  receiver = await startReceiver();
  agent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'ops', tools: [{ name: 'rm', risk: 'destructive' }] });
});

afterAll(async () => {
  await agent?.close();
  await gw?.stop();
  await receiver?.close();
});

interface Approval {
  id: string;
  state: string;
  decided_by: string | null;
  reason: string | null;
}

const page = (section: string): string => `/dashboard/projects/${PROJECT}/${section}`;

async function get(s: DashboardSession, path: string): Promise<{ status: number; html: string }> {
  const res = await fetch(`${gw.url}${path}`, { headers: { cookie: s.cookie }, redirect: 'manual' });
  return { status: res.status, html: await res.text() };
}

async function post(s: DashboardSession, path: string, fields: [string, string][] = []): Promise<{ status: number; html: string }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: gw.url },
    body: new URLSearchParams([...fields, ['csrf_token', s.csrf]]).toString(),
    redirect: 'manual',
  });
  return { status: res.status, html: await res.text() };
}

let counter = 0;
const session = (role: 'owner' | 'admin' | 'member', workspaces: readonly string[] | null = null): Promise<DashboardSession> =>
  signInAs(gw, { email: `exec-${role}-${(counter += 1)}@example.com`, projectId: PROJECT, role, workspaceIds: workspaces });

/** An API key the signed-in user mints in the keys page (it belongs to that user). */
async function mintAs(s: DashboardSession, name: string): Promise<string> {
  const minted = await post(s, page('keys'), [['name', name], ['scopes', 'execution'], ['workspace_mode', 'all']]);
  expect(minted.status, minted.html.slice(0, 400)).toBe(201);
  const value = minted.html.match(/id="revealed-value">([^<]+)</)?.[1] ?? '';
  expect(value).toMatch(/^svc_/);
  return value;
}

/** An invocation of a destructive tool in the operational workspace: held for an approval. */
async function pendingApproval(key = keys.exec): Promise<string> {
  const res = await call(`${gw.url}/${PROJECT}/v1/exec/invocations`, { key, body: { workspace_id: WS_OPS, tool_name: 'rm', arguments: {} } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const approvalId = (res.body as { approval_id: string | null }).approval_id;
  expect(approvalId).toMatch(/^app_/);
  return approvalId ?? '';
}

const approval = async (id: string): Promise<Approval | undefined> => {
  const res = await call(`${gw.url}/${PROJECT}/v1/exec/approvals?limit=100`, { key: keys.exec });
  return (res.body as { data: Approval[] }).data.find((a) => a.id === id);
};

describe('approvals page', () => {
  it('lists a pending approval to a member, without buttons, and refuses the member a decision', async () => {
    const id = await pendingApproval();
    const member = await session('member');
    const listed = await get(member, page('approvals'));
    expect(listed.status).toBe(200);
    expect(listed.html).toContain(`data-approval-id="${id}"`);
    expect(listed.html).not.toContain(`${id}/accept`);
    expect((await post(member, `${page('approvals')}/${id}/accept`)).status).toBe(403);
    expect((await approval(id))?.state).toBe('pending');
  });

  it("accepts as the user (decided_by is the user's id) and the invocation is dispatched", async () => {
    const id = await pendingApproval();
    const admin = await session('admin');
    const answer = await post(admin, `${page('approvals')}/${id}/accept`);
    expect(answer.status).toBe(200);
    expect(answer.html).toContain('Approved rm');
    expect(await approval(id)).toMatchObject({ state: 'accepted', decided_by: admin.userId });
    await agent.waitForDispatch(1);
  });

  it("decides through the API with a key minted in the dashboard as the key's user (decided_by is the usr_ id, SPEC exec.approved)", async () => {
    const admin = await session('admin');
    const minted = await post(admin, page('keys'), [['name', 'deciding'], ['scopes', 'execution'], ['workspace_mode', 'all']]);
    expect(minted.status, minted.html.slice(0, 400)).toBe(201);
    const value = minted.html.match(/id="revealed-value">([^<]+)</)?.[1] ?? '';
    expect(value).toMatch(/^svc_/);
    const accepted = await pendingApproval();
    const res = await call(`${gw.url}/${PROJECT}/v1/exec/approvals/${accepted}/accept`, { key: value, body: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ state: 'accepted', decided_by: admin.userId });
    expect(admin.userId).toMatch(/^usr_/);
    const rejected = await pendingApproval();
    const no = await call(`${gw.url}/${PROJECT}/v1/exec/approvals/${rejected}/reject`, { key: value, body: { reason: 'later' } });
    expect(no.body).toMatchObject({ state: 'rejected', decided_by: admin.userId });
  });

  it('refuses the user whose key asked, in the page and through any key of theirs (403 approval_not_permitted); another admin decides', async () => {
    const admin = await session('admin');
    const asking = await mintAs(admin, 'asking');
    const sibling = await mintAs(admin, 'sibling');
    const id = await pendingApproval(asking);
    for (const [key, says] of [[asking, 'was requested with this API key'], [sibling, `was requested by user ${admin.userId}`]] as const) {
      const res = await call(`${gw.url}/${PROJECT}/v1/exec/approvals/${id}/accept`, { key, body: {} });
      expectError(res, 403, 'approval_not_permitted', 'approval_id');
      expect(errorOf(res).message).toContain(says);
    }
    const inPage = await post(admin, `${page('approvals')}/${id}/accept`);
    expect(inPage.status).toBe(403);
    expect(inPage.html).toContain('another privileged principal must decide it');
    expect((await approval(id))?.state).toBe('pending');
    const other = await session('owner');
    expect((await post(other, `${page('approvals')}/${id}/accept`)).status).toBe(200);
    expect(await approval(id)).toMatchObject({ state: 'accepted', decided_by: other.userId });
  });

  it("refuses a key whose user is now a member (the role is read at each decision): 403 approval_not_permitted", async () => {
    const admin = await session('admin');
    const value = await mintAs(admin, 'to-demote');
    const id = await pendingApproval();
    const demoted = await runCli(['users', 'grant', admin.userId, '--role', 'member', '--project', PROJECT, '--db', gw.dbPath]);
    expect(demoted.code, demoted.stderr).toBe(0);
    const res = await call(`${gw.url}/${PROJECT}/v1/exec/approvals/${id}/reject`, { key: value, body: {} });
    expectError(res, 403, 'approval_not_permitted');
    expect(errorOf(res).message).toContain(`this API key's user ${admin.userId} is a member in project ${PROJECT}`);
    expect((await approval(id))?.state).toBe('pending');
  });

  it('rejects with a reason, which the API returns', async () => {
    const id = await pendingApproval();
    const owner = await session('owner');
    expect((await post(owner, `${page('approvals')}/${id}/reject`, [['reason', 'not on a Friday']])).status).toBe(200);
    expect(await approval(id)).toMatchObject({ state: 'rejected', decided_by: owner.userId, reason: 'not on a Friday' });
  });

  it("neither lists nor decides an approval of a workspace the user cannot read (404, as the API's rule)", async () => {
    const id = await pendingApproval();
    const narrow = await session('admin', [WS_B]);
    expect((await get(narrow, page('approvals'))).html).not.toContain(id);
    const answer = await post(narrow, `${page('approvals')}/${id}/accept`);
    expect(answer.status).toBe(404);
    expect(answer.html).toContain('your account may use');
    expect((await approval(id))?.state).toBe('pending');
  });
});

describe('webhooks page', () => {
  it('adds an endpoint (secret shown once), sends it a test delivery, disables and deletes it', async () => {
    const admin = await session('admin');
    const added = await post(admin, page('webhooks'), [['url', receiver.url], ['description', 'ops <hooks>'], ['events', 'exec.completed']]);
    expect(added.status, added.html.slice(0, 400)).toBe(201);
    expect(added.html).toMatch(/id="revealed-value">whsec_/);
    const listed = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.exec });
    const hook = (listed.body as { data: { id: string; url: string; description: string; is_active: boolean }[] }).data.find((w) => w.url === receiver.url);
    expect(hook).toMatchObject({ description: 'ops <hooks>', is_active: true });
    const id = hook?.id ?? '';

    const before = receiver.received.length;
    const tested = await post(admin, `${page('webhooks')}/${id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.html).toContain('Test delivery delivered');
    const delivery = await eventually(async () => receiver.received.slice(before).find((d) => d.body.type === 'webhook.test'), 'the test delivery');
    expect(delivery.headers['x-webhook-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);

    expect((await post(admin, `${page('webhooks')}/${id}/disable`)).status).toBe(200);
    expect(((await call(`${gw.url}/${PROJECT}/v1/webhooks/${id}`, { key: keys.exec })).body as { is_active: boolean }).is_active).toBe(false);
    expect((await get(admin, `${page('webhooks')}/${id}`)).html).toContain('ops &lt;hooks&gt;');
    expect((await post(admin, `${page('webhooks')}/${id}/delete`)).status).toBe(200);
    expect((await call(`${gw.url}/${PROJECT}/v1/webhooks/${id}`, { key: keys.exec })).status).toBe(404);
  });
});
