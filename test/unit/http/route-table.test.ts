import { describe, expect, it } from 'vitest';
import { createRouteTable, type RoutePattern } from '../../../src/http/route-table.js';

/** Each route's value names it, so a match says which route won. */
function route(method: string, pattern: string): RoutePattern<string> {
  return { method, pattern, value: `${method} ${pattern}` };
}

// Parameterised routes are registered before the literal ones on purpose: specificity, not order, must win.
const table = createRouteTable([
  route('GET', '/:project/v1/endpoints/:endpoint'),
  route('GET', '/:project/v1/endpoints/current'),
  route('GET', '/:project/v1/models'),
  route('POST', '/:project/v1/models'),
  route('GET', '/:project/v1/models/*model'),
  route('DELETE', '/:project/v1/models/*model'),
  route('POST', '/:project/:endpoint/v1/chat/completions'),
  route('GET', '/healthz'),
]);

describe('createRouteTable', () => {
  it('prefers a literal segment over a parameter whatever the registration order', () => {
    expect(table.match('GET', '/proj_a/v1/endpoints/current')).toEqual({
      kind: 'found',
      value: 'GET /:project/v1/endpoints/current',
      params: { project: 'proj_a' },
    });
  });

  it('captures :params one segment each', () => {
    expect(table.match('POST', '/proj_a/chat/v1/chat/completions')).toEqual({
      kind: 'found',
      value: 'POST /:project/:endpoint/v1/chat/completions',
      params: { project: 'proj_a', endpoint: 'chat' },
    });
  });

  it('percent-decodes :params', () => {
    expect(table.match('GET', '/proj_a/v1/endpoints/my%20ep')).toMatchObject({ kind: 'found', params: { endpoint: 'my ep' } });
  });

  it.each([
    ['a plain id', 'llama-3', 'llama-3'],
    ['an id with slashes', 'meta-llama/Llama-3', 'meta-llama/Llama-3'],
    ['an id with a percent-encoded slash', 'meta-llama%2FLlama-3', 'meta-llama/Llama-3'],
    ['an id with several levels and encoded characters', 'org/team/model%3Av1', 'org/team/model:v1'],
  ])('captures %s in a final *rest parameter', (_label, pathTail, model) => {
    expect(table.match('GET', `/proj_a/v1/models/${pathTail}`)).toEqual({
      kind: 'found',
      value: 'GET /:project/v1/models/*model',
      params: { project: 'proj_a', model },
    });
  });

  it('requires at least one segment for a *rest parameter', () => {
    expect(table.match('GET', '/proj_a/v1/models')).toMatchObject({ kind: 'found', value: 'GET /:project/v1/models' });
  });

  it.each([
    ['/proj_a/v1/models/', 'GET /:project/v1/models'],
    ['/healthz/', 'GET /healthz'],
    ['/proj_a/v1/models/meta-llama/Llama-3/', 'GET /:project/v1/models/*model'],
  ])('tolerates a trailing slash on %s', (path, value) => {
    expect(table.match('GET', path)).toMatchObject({ kind: 'found', value });
  });

  it('answers HEAD with the GET route', () => {
    expect(table.match('HEAD', '/proj_a/v1/models/llama-3')).toMatchObject({
      kind: 'found',
      value: 'GET /:project/v1/models/*model',
      params: { model: 'llama-3' },
    });
  });

  it.each([
    ['PUT', '/proj_a/v1/models/llama-3', ['DELETE', 'GET']],
    ['DELETE', '/proj_a/v1/models', ['GET', 'POST']],
    ['GET', '/proj_a/chat/v1/chat/completions', ['POST']],
    ['HEAD', '/proj_a/chat/v1/chat/completions', ['POST']],
  ])('returns method_not_allowed for %s %s listing the allowed methods', (method, path, allow) => {
    const result = table.match(method, path);
    expect(result.kind).toBe('method_not_allowed');
    if (result.kind === 'method_not_allowed') expect([...result.allow].sort()).toEqual(allow);
  });

  it.each([
    ['an unknown path', '/nope'],
    ['the root', '/'],
    ['a path one segment short', '/proj_a/v1'],
    ['a path one segment too long', '/proj_a/v1/endpoints/chat/extra'],
    ['a literal that differs only in case', '/proj_a/V1/models'],
    ['malformed percent-encoding in a :param', '/proj_a/v1/endpoints/%E0%A4%A'],
    ['malformed percent-encoding in a *rest', '/proj_a/v1/models/meta%2'],
  ])('returns not_found for %s', (_label, path) => {
    expect(table.match('GET', path)).toEqual({ kind: 'not_found' });
  });

  it('returns not_found from an empty table', () => {
    expect(createRouteTable<string>([]).match('GET', '/healthz')).toEqual({ kind: 'not_found' });
  });
});

// Regression: two GET routes matching one path listed GET twice in the 405 allow list.
describe('the 405 allow list', () => {
  it('names each method once', () => {
    const t = createRouteTable([route('GET', '/m/:id'), route('GET', '/m/*rest')]);
    expect(t.match('POST', '/m/x')).toEqual({ kind: 'method_not_allowed', allow: ['GET'] });
  });
});

describe('remembered answers', () => {
  it('give the same match for a repeated path, and matches cannot be altered by a caller', () => {
    const t = createRouteTable([route('GET', '/p/:project/items')]);
    const first = t.match('GET', '/p/a%20b/items');
    expect(t.match('GET', '/p/a%20b/items')).toEqual(first);
    expect(first).toEqual({ kind: 'found', value: 'GET /p/:project/items', params: { project: 'a b' } });
    if (first.kind === 'found') expect(() => Object.assign(first.params, { project: 'other' })).toThrow(TypeError);
  });

  it('stay correct once more distinct paths were seen than are remembered', () => {
    const t = createRouteTable([route('GET', '/p/:project/items')]);
    for (let i = 0; i < 3000; i++) {
      const m = t.match('GET', `/p/proj_${i}/items`);
      expect(m.kind === 'found' && m.params.project).toBe(`proj_${i}`);
    }
    expect(t.match('POST', '/p/proj_7/items').kind).toBe('method_not_allowed');
    expect(t.match('GET', '/p/proj_7/items').kind).toBe('found');
  });
});
