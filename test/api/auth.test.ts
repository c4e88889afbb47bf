import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { OTHER_PROJECT, PROJECT, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call, expectError } from '../helpers/http.js';

const suite = useGatewaySuite();

const models = (project = PROJECT): string => `${suite.gw.url}/${project}/v1/models`;
const direct = (slug: string): string => `${suite.gw.url}/${PROJECT}/${slug}/v1/models`;

describe('401: no usable key', () => {
  it('returns 401 authentication_required without an Authorization header', async () => {
    expectError(await call(models()), 401, 'authentication_required');
  });

  it.each([
    ['a Basic credential', 'Basic dXNlcjpwYXNz'],
    ['a Bearer value that is not a key', 'Bearer not-a-key'],
    ['a key with a short token', 'Bearer svc_test_abc'],
  ])('returns 401 invalid_api_key for %s', async (_what, authorization) => {
    expectError(await call(models(), { headers: { authorization } }), 401, 'invalid_api_key');
  });

  it('returns 401 invalid_api_key for a well-formed key that was never minted', async () => {
    expectError(await call(models(), { key: `svc_test_${'A'.repeat(43)}` }), 401, 'invalid_api_key');
  });

  it('returns 401 key_expired once expires_at has passed', async () => {
    expectError(await call(models(), { key: suite.keys.expired }), 401, 'key_expired');
  });
});

describe('403: a valid key that is denied', () => {
  it('returns 403 project_mismatch for a key of another project', async () => {
    expectError(await call(models(), { key: suite.keys.otherProject }), 403, 'project_mismatch');
    expect((await call(models(OTHER_PROJECT), { key: suite.keys.otherProject })).status).toBe(200);
  });

  it('returns 403 project_mismatch, not 404, for a project that does not exist', async () => {
    expectError(await call(models('proj_nope'), { key: suite.keys.full }), 403, 'project_mismatch');
  });

  it('accepts the project UUID on management routes only (SPEC Endpoints); elsewhere 403 naming the external id', async () => {
    const db = new Database(suite.gw.dbPath, { readonly: true });
    const uuid = (db.prepare('SELECT uuid FROM projects WHERE id = ?').get(PROJECT) as { uuid: string }).uuid;
    db.close();
    const res = await call(models(uuid), { key: suite.keys.full });
    expectError(res, 403, 'project_mismatch');
    expect((res.body as { error: { message: string } }).error.message).toContain(`use /${PROJECT}/`);
    expect((await call(`${suite.gw.url}/${uuid}/v1/management/semantic-router/rules`, { key: suite.keys.full })).status).toBe(200);
  });

  it('admits an address inside the allowlist and refuses one outside it with ip_not_allowed', async () => {
    expect((await call(models(), { key: suite.keys.ipAllowed })).status).toBe(200);
    expectError(await call(models(), { key: suite.keys.ipDenied }), 403, 'ip_not_allowed');
  });

  it('lets the blocklist win over the allowlist', async () => {
    expectError(await call(models(), { key: suite.keys.ipBlockedWins }), 403, 'ip_not_allowed');
  });

  it('ignores X-Forwarded-For when trust_proxy is off', async () => {
    const res = await call(models(), { key: suite.keys.ipDenied, headers: { 'x-forwarded-for': '10.1.2.3' } });
    expectError(res, 403, 'ip_not_allowed');
  });

  it('returns 403 scope_insufficient on an inference route for a management-only key', async () => {
    const res = await call(models(), { key: suite.keys.managementOnly });
    expectError(res, 403, 'scope_insufficient');
    expect((res.body as { error: { type: string } }).error.type).toBe('authentication_error');
  });

  it('returns 403 scope_insufficient on a management route for an inference-only key', async () => {
    const url = `${suite.gw.url}/${PROJECT}/v1/management/semantic-router/rules`;
    expectError(await call(url, { key: suite.keys.inferenceOnly }), 403, 'scope_insufficient');
  });

  it('restricts an endpoint-bound key to its endpoint with endpoint_restricted', async () => {
    expect((await call(direct('chat'), { key: suite.keys.endpointBound })).status).toBe(200);
    expectError(await call(direct('reasoner'), { key: suite.keys.endpointBound }), 403, 'endpoint_restricted');
  });

  it('returns 404 endpoint_not_found for an unknown endpoint slug', async () => {
    expectError(await call(direct('nope'), { key: suite.keys.full }), 404, 'endpoint_not_found');
  });
});

describe('workspace selection (SPEC Authentication 10)', () => {
  it('runs a confined key with one workspace in that workspace when none is named', async () => {
    expect((await call(direct('b-only'), { key: suite.keys.confinedOne })).status).toBe(200);
  });

  it.each([
    ['X-Workspace-Id', 'x-workspace-id'],
    ['X-Service-Workspace', 'x-service-workspace'],
  ])('refuses a confined key naming a workspace outside its list by %s', async (_name, header) => {
    const res = await call(direct('chat'), { key: suite.keys.confinedOne, headers: { [header]: WS_DEFAULT } });
    expectError(res, 403, 'workspace_not_allowed');
  });

  it('refuses a confined key with several workspaces that names none with workspace_required', async () => {
    expectError(await call(direct('chat'), { key: suite.keys.confinedTwo }), 403, 'workspace_required');
    expect((await call(direct('chat'), { key: suite.keys.confinedTwo, headers: { 'x-workspace-id': WS_B } })).status).toBe(200);
  });

  it('returns 400 invalid_workspace_id for a workspace that is not ws_<hex>', async () => {
    const res = await call(direct('chat'), { key: suite.keys.full, headers: { 'x-workspace-id': 'default' } });
    expectError(res, 400, 'invalid_workspace_id', 'X-Workspace-Id');
  });

  it('returns 404 workspace_not_found for a well-formed workspace the project does not have', async () => {
    const res = await call(direct('chat'), { key: suite.keys.full, headers: { 'x-workspace-id': 'ws_0fff' } });
    expectError(res, 404, 'workspace_not_found', 'X-Workspace-Id');
  });

  it("returns 403 project_mismatch for another project's workspace (SPEC error table)", async () => {
    const res = await call(direct('chat'), { key: suite.keys.full, headers: { 'x-workspace-id': 'ws_0d0d0d' } });
    expectError(res, 403, 'project_mismatch', 'X-Workspace-Id');
  });

  it('refuses an endpoint that does not serve the named workspace', async () => {
    const res = await call(direct('b-only'), { key: suite.keys.full, headers: { 'x-workspace-id': WS_DEFAULT } });
    expectError(res, 403, 'workspace_not_allowed');
  });

  it('runs an unconfined key in the endpoint\'s workspace when the endpoint does not serve the default', async () => {
    expect((await call(direct('b-only'), { key: suite.keys.full })).status).toBe(200);
  });
});
