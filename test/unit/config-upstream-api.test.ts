import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';

function config(kind: string, api?: string): unknown {
  const upstream: Record<string, unknown> = { base_url: 'http://a:1/v1', model: 'm' };
  if (api !== undefined) upstream.api = api;
  return { projects: [{ id: 'proj_demo', slug: 'demo', endpoints: [{ slug: 'e', name: 'E', kind, tier: 'gpu', model: { id: 'm', context_window: 8192 }, upstream }] }] };
}

function errorOf(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('upstream.api', () => {
  it('reads chat_completions when omitted (no field kept) and responses when set on a chat endpoint', () => {
    expect(parseConfig(config('chat')).projects[0]?.endpoints[0]?.upstream.api).toBeUndefined();
    expect(parseConfig(config('chat', 'chat_completions')).projects[0]?.endpoints[0]?.upstream.api).toBeUndefined();
    expect(parseConfig(config('chat', 'responses')).projects[0]?.endpoints[0]?.upstream.api).toBe('responses');
  });

  it('refuses responses on an endpoint that is not a chat endpoint, and an unknown API, naming the field', () => {
    expect(errorOf(config('embedding', 'responses'))).toContain('projects[0].endpoints[0].upstream.api');
    expect(errorOf(config('chat', 'completions'))).toContain('projects[0].endpoints[0].upstream.api');
  });
});
