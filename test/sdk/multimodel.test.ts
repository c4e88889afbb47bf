/**
 * The multimodel route with the official openai client. The route lives at `.../chat/completions/multimodel`
 * under the router base URL; the SDK's `path` request option points `chat.completions.create` at it, so the
 * typed call, its response and its stream are the SDK's own. The simulator plans (`[plan: ...]`).
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useRouterSuite } from '../helpers/router-config.js';

const suite = useRouterSuite();
const client = (): OpenAI => new OpenAI({ baseURL: `${suite.base}/_semantic/router/v1`, apiKey: suite.keys.full, maxRetries: 0 });
const PATH = { path: '/chat/completions/multimodel' };

describe('the multimodel route through the openai SDK', () => {
  it('answers a decomposed turn as a ChatCompletion with usage covering every dispatch', async () => {
    const { data, response } = await client()
      .chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'plan a weekend trip to lisbon. [plan: steps=3]' }] }, PATH)
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.id).toBe(response.headers.get('x-request-id'));
    expect(data.choices[0]?.message.content?.length).toBe(105);
    expect(data.choices[0]?.finish_reason).toBe('stop');
    // Three steps and one synthesis, 16 tokens each from the simulator.
    expect(data.usage?.completion_tokens).toBe(64);
    expect(response.headers.get('x-service-routed-endpoint')).not.toBeNull();
  });

  it('streams, with several choices, each finishing once', async () => {
    const stream = await client().chat.completions.create(
      { model: 'any', n: 2, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'recommend a recipe. [plan: steps=2]' }] },
      PATH,
    );
    const text = ['', ''];
    const finished: number[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text[choice.index] += choice.delta.content ?? '';
        if (choice.finish_reason) finished.push(choice.index);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finished.sort()).toEqual([0, 1]);
    expect(text.every((t) => t.length > 0)).toBe(true);
    expect(usage?.completion_tokens).toBe(2 * 2 * 16);
  });

  it('raises the SDK error for a research turn with n above 1, and for a failed stream', async () => {
    const err = await client()
      .chat.completions.create({ model: 'any', n: 2, messages: [{ role: 'user', content: 'research the history of lisbon.' }] }, PATH)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('unsupported_value');
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');

    const body = { model: 'any', stream: true as const, messages: [{ role: 'user' as const, content: 'recommend a recipe. [plan: steps=2]' }], sim: { error_status: 500 } };
    const stream = await client().chat.completions.create(body, PATH);
    const failure = await (async () => {
      for await (const _chunk of stream) {
        // progress chunks, until the error frame
      }
      return null;
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).code).toBe('internal_error');
  });

  it('serves the caller tools like the single-model route: tool_calls come back', async () => {
    const data = await client().chat.completions.create(
      {
        model: 'any',
        messages: [{ role: 'user', content: 'look up the weather in lisbon' }],
        tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      },
      PATH,
    );
    expect(data.choices[0]?.finish_reason).toBe('tool_calls');
    expect(data.choices[0]?.message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'weather' } });
  });
});
