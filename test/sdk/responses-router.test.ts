/**
 * The Responses API's semantic route (`/{project}/_semantic/router/v1/responses`): the router decides on
 * the translated chat turn exactly as for chat, and the answer comes back as a Response.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { useRouterSuite } from '../helpers/router-config.js';

const suite = useRouterSuite();
const client = (): OpenAI => new OpenAI({ baseURL: `${suite.base}/_semantic/router/v1`, apiKey: suite.keys.full, maxRetries: 0 });

describe('responses on the semantic router', () => {
  it('routes the turn as chat would and answers with a Response carrying the routed headers', async () => {
    const { data, response } = await client().responses.create({ model: 'any', input: 'what is the integral of x squared' }).withResponse();
    expect(data.object).toBe('response');
    expect(data.status).toBe('completed');
    expect(data.output_text.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(response.headers.get('x-service-routed-endpoint')).toBe('math');
    expect(response.headers.get('x-service-routed-model')).toBe('model-math');
    expect(response.headers.get('x-request-id')).toBe(data.id);
  });

  it('streams through the router', async () => {
    const stream = await client().responses.create({ model: 'any', input: 'recommend a recipe for dinner tonight', stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('response.created');
    expect(types[types.length - 1]).toBe('response.completed');
  });

  it('surfaces router refusals in the error envelope', async () => {
    const err = await client().responses.create({ model: 'any', input: 'hi', max_output_tokens: 100_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });

  // Was: a response made on the router base URL could be read only under /{project}/v1/responses.
  it('retrieves, lists and deletes a routed response on the router base URL, and serves conversations there', async () => {
    const routed = client();
    const created = await routed.responses.create({ model: 'any', input: 'what is the integral of x squared' });
    expect(await routed.responses.retrieve(created.id)).toMatchObject({ id: created.id, status: 'completed' });
    expect((await routed.responses.inputItems.list(created.id)).data).toHaveLength(1);
    expect((await routed.responses.delete(created.id)) ?? null).toBeDefined();
    expect(await routed.responses.retrieve(created.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    const conv = await routed.conversations.create({});
    expect(await routed.conversations.retrieve(conv.id)).toEqual(conv);
  });
});
