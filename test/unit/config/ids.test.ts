import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { endpointIdFor, uuidV5, workspaceIdFor } from '../../../src/config/ids.js';
import { parseConfig } from '../../../src/config.js';
import { createCatalog } from '../../../src/store/catalog.js';
import { syncConfig } from '../../../src/store/catalog/sqlite-catalog.js';
import { openDatabase } from '../../../src/store/db.js';

type Raw = Record<string, unknown>;

const KEY = `svc_demo_${randomBytes(32).toString('base64url')}`;
const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function endpoint(slug: string, extra: Raw = {}): Raw {
  return { slug, name: slug, kind: 'chat', tier: 'gpu', model: { id: `m-${slug}`, context_window: 4096 }, upstream: { base_url: 'http://127.0.0.1:1/v1', model: 'm' }, ...extra };
}

function project(extra: Raw = {}): Raw {
  return {
    id: 'proj_demo',
    slug: 'demo',
    workspaces: [{ name: 'Main' }, { name: 'Research' }],
    default_workspace: 'Main',
    endpoints: [endpoint('chat'), endpoint('embed', { kind: 'embedding', workspaces: ['Research'] })],
    keys: [{ value: KEY, endpoint_id: 'chat' }],
    ...extra,
  };
}

const parse = (...projects: Raw[]) => parseConfig({ projects });

describe('derived ids', () => {
  it('computes RFC 9562 UUIDv5 (its test vector: www.example.com in the DNS namespace)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('are the same at every parse (a restart) and shaped as the config requires', () => {
    const a = parse(project()).projects[0];
    const b = parse(project()).projects[0];
    expect(a?.endpoints.map((e) => e.id)).toEqual(b?.endpoints.map((e) => e.id));
    expect(a?.workspaces.map((w) => w.id)).toEqual(b?.workspaces.map((w) => w.id));
    expect(a?.endpoints[0]?.id).toMatch(UUID_V5);
    expect(a?.workspaces[0]?.id).toMatch(/^ws_[0-9a-f]{24}$/);
    expect(a?.endpoints[0]?.id).toBe(endpointIdFor('proj_demo', 'chat'));
    expect(a?.workspaces[0]?.id).toBe(workspaceIdFor('proj_demo', 'Main'));
  });

  it('differ between slugs, names and projects, including look-alike inputs', () => {
    const endpoints = [
      endpointIdFor('proj_demo', 'chat'),
      endpointIdFor('proj_demo', 'chat2'),
      endpointIdFor('proj_other', 'chat'),
      endpointIdFor('proj_d', 'emo-chat'),
      endpointIdFor('proj_demochat', ''),
    ];
    expect(new Set(endpoints).size).toBe(endpoints.length);
    const workspaces = [workspaceIdFor('proj_demo', 'Main'), workspaceIdFor('proj_demo', 'main'), workspaceIdFor('proj_other', 'Main'), workspaceIdFor('proj_demo', 'Main ')];
    expect(new Set(workspaces).size).toBe(workspaces.length);
  });

  it('do not depend on the order of entries, nor on other entries', () => {
    const shuffled = parse(project({ endpoints: [endpoint('embed', { kind: 'embedding' }), endpoint('extra'), endpoint('chat')] })).projects[0];
    expect(shuffled?.endpoints.find((e) => e.slug === 'chat')?.id).toBe(endpointIdFor('proj_demo', 'chat'));
  });

  it('leave explicit ids alone', () => {
    const id = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
    const p = parse(project({ workspaces: [{ id: 'ws_0a', name: 'Main' }, { name: 'Research' }], endpoints: [endpoint('chat', { id })] })).projects[0];
    expect(p?.endpoints[0]?.id).toBe(id);
    expect(p?.workspaces[0]?.id).toBe('ws_0a');
    expect(p?.default_workspace).toBe('ws_0a');
    expect(p?.keys[0]?.endpoint_id).toBe(id);
  });

  it('turn references by workspace name and endpoint slug into ids', () => {
    const p = parse(project({ keys: [{ value: KEY, endpoint_id: 'chat' }, { value: `svc_demo_${randomBytes(32).toString('base64url')}`, allowed_workspace_ids: ['Research', 'Main'] }] })).projects[0];
    const main = workspaceIdFor('proj_demo', 'Main');
    const research = workspaceIdFor('proj_demo', 'Research');
    expect(p?.default_workspace).toBe(main);
    expect(p?.endpoints[1]?.workspaces).toEqual([research]);
    expect(p?.keys[0]?.endpoint_id).toBe(endpointIdFor('proj_demo', 'chat'));
    expect(p?.keys[1]?.allowed_workspace_ids).toEqual([research, main]);
  });

  it('refuses two id-less workspaces with one name, naming both', () => {
    expect(() => parse(project({ workspaces: [{ name: 'Main' }, { name: 'Main' }] }))).toThrow(
      /projects\[0\]\.workspaces\[1\]\.name: is also the name of workspaces\[0\], and neither has an id/,
    );
  });

  it('refuses a reference by a name two workspaces share', () => {
    expect(() => parse(project({ workspaces: [{ id: 'ws_01', name: 'Main' }, { id: 'ws_02', name: 'Main' }] }))).toThrow(
      /projects\[0\]\.default_workspace: names Main, the name of more than one workspace/,
    );
  });

  it('still refuses references to nothing', () => {
    expect(() => parse(project({ default_workspace: 'Nowhere' }))).toThrow(/default_workspace: names Nowhere, which is not in workspaces/);
    expect(() => parse(project({ keys: [{ value: KEY, endpoint_id: 'nope' }] }))).toThrow(/keys\[0\]\.endpoint_id: names no endpoint of the project/);
  });

  it('keep the store rows across restarts: the second sync deletes and re-creates nothing', () => {
    const db = openDatabase(':memory:');
    syncConfig(db, parse(project()), 1);
    const second = syncConfig(db, parse(project()), 2);
    expect(second).toMatchObject({ endpoints: 2, endpointsDeleted: 0, keys: 1, keysRevoked: 0 });
    const catalog = createCatalog(db);
    catalog.close();
    expect(catalog.endpoint('proj_demo', 'chat')?.id).toBe(endpointIdFor('proj_demo', 'chat'));
    expect([...catalog.workspaces('proj_demo').keys()].sort()).toEqual([workspaceIdFor('proj_demo', 'Main'), workspaceIdFor('proj_demo', 'Research')].sort());
    expect(catalog.project('proj_demo')?.defaultWorkspaceId).toBe(workspaceIdFor('proj_demo', 'Main'));
  });
});
