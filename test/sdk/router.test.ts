/**
 * The official `openai` client pointed at a semantic-router route: only the base address changes, and
 * the routed endpoint is readable from the response headers (SPEC X-Service-Routed-*).
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { useRouterSuite } from '../helpers/router-config.js';

const suite = useRouterSuite();
const client = (): OpenAI => new OpenAI({ baseURL: `${suite.base}/_semantic/router/v1`, apiKey: suite.keys.full, maxRetries: 0 });

describe('openai client on the semantic router', () => {
  it('creates a completion and exposes the routed endpoint and model', async () => {
    const { data, response } = await client()
      .chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'what is the integral of x squared' }] })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-service-routed-endpoint')).toBe('math');
    expect(response.headers.get('x-service-routed-model')).toBe('model-math');
  });

  it('streams through the router with the routed headers on the stream response', async () => {
    const { data: stream, response } = await client()
      .chat.completions.create({ model: 'any', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'recommend a recipe for dinner tonight' }] })
      .withResponse();
    expect(response.headers.get('x-service-routed-endpoint')).toBe('chat');
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(usage?.completion_tokens).toBe(DEFAULT_CONTENT_TOKENS);
  });

  it('surfaces router errors as typed API errors with the SPEC code', async () => {
    const err = await client()
      .chat.completions.create({ model: 'any', max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });
});
