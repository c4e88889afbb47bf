import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';

const ENDPOINT_ID = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';

function withUpstream(upstream: Record<string, unknown>): unknown {
  return {
    projects: [
      {
        id: 'proj_demo',
        slug: 'demo',
        endpoints: [{ id: ENDPOINT_ID, slug: 'chat', name: 'Chat', kind: 'chat', tier: 'gpu', model: { id: 'm', context_window: 8192 }, upstream }],
      },
    ],
  };
}

const upstreamOf = (upstream: Record<string, unknown>) => parseConfig(withUpstream(upstream)).projects[0]?.endpoints[0]?.upstream;

function errorOf(upstream: Record<string, unknown>): string {
  try {
    parseConfig(withUpstream(upstream));
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('endpoint upstream config', () => {
  it('reads one base_url as a pool of one server, with default health', () => {
    expect(upstreamOf({ base_url: 'http://a:1/v1', model: 'm', api_key_env: 'K' })).toEqual({
      base_url: 'http://a:1/v1',
      model: 'm',
      api_key_env: 'K',
      servers: [{ base_url: 'http://a:1/v1', api_key_env: 'K', weight: 1 }],
      health: { failure_threshold: 3, cooldown_ms: 10_000 },
    });
  });

  it('reads a pool: servers take the upstream key unless they name their own, base_url is the first', () => {
    const u = upstreamOf({
      model: 'm',
      api_key_env: 'SHARED',
      servers: [{ base_url: 'http://a:1/v1', weight: 2 }, { base_url: 'http://b:1/v1', api_key_env: 'OWN' }],
      health: { failure_threshold: 5, cooldown_ms: 2000 },
    });
    expect(u?.base_url).toBe('http://a:1/v1');
    expect(u?.servers).toEqual([
      { base_url: 'http://a:1/v1', api_key_env: 'SHARED', weight: 2 },
      { base_url: 'http://b:1/v1', api_key_env: 'OWN', weight: 1 },
    ]);
    expect(u?.health).toEqual({ failure_threshold: 5, cooldown_ms: 2000 });
  });

  it.each([
    ['neither base_url nor servers', { model: 'm' }, 'projects[0].endpoints[0].upstream.base_url: is required'],
    ['both base_url and servers', { model: 'm', base_url: 'http://a:1', servers: [{ base_url: 'http://b:1' }] }, 'projects[0].endpoints[0].upstream.servers: cannot be set'],
    ['an empty pool', { model: 'm', servers: [] }, 'projects[0].endpoints[0].upstream.servers:'],
    ['a server that is not http(s)', { model: 'm', servers: [{ base_url: 'ftp://a' }] }, 'projects[0].endpoints[0].upstream.servers[0].base_url:'],
    ['a duplicate server', { model: 'm', servers: [{ base_url: 'http://a:1' }, { base_url: 'http://a:1' }] }, 'projects[0].endpoints[0].upstream.servers[1].base_url: is a duplicate'],
    ['a weight of 0', { model: 'm', servers: [{ base_url: 'http://a:1', weight: 0 }] }, 'projects[0].endpoints[0].upstream.servers[0].weight:'],
    ['a zero failure threshold', { model: 'm', base_url: 'http://a:1', health: { failure_threshold: 0 } }, 'projects[0].endpoints[0].upstream.health.failure_threshold:'],
    ['an unknown server field', { model: 'm', servers: [{ base_url: 'http://a:1', url: 'x' }] }, 'projects[0].endpoints[0].upstream.servers[0]:'],
  ])('refuses %s, naming the field path', (_name, upstream, path) => {
    expect(errorOf(upstream)).toContain(path);
  });
});
